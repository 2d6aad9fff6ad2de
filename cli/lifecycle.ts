import { type Command, InvalidArgumentError } from 'commander';
import { MAX_ROTATION_GRACE_SECONDS, rotateKey, setActive, setPassword } from '../src/tenancy/account-lifecycle.js';
import type { Store } from '../src/store/types.js';
import { recordCommand } from './audit.js';
import { configOption, readStdin, withStore } from './common.js';

/** The account lifecycle from the command line (docs/management.md "Account lifecycle"). */

async function requireUser(store: Store, email: string) {
  const user = await store.accounts.findUserByEmail(email);
  if (!user) throw new Error(`no user with email ${email}`);
  return user;
}

function graceSeconds(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > MAX_ROTATION_GRACE_SECONDS) throw new InvalidArgumentError(`must be a whole number of seconds from 0 to ${MAX_ROTATION_GRACE_SECONDS} (7 days)`);
  return n;
}

/** `users password`, `users deactivate`, `users activate`. */
export function addUserLifecycleCommands(users: Command): void {
  users.command('password <email>').description('Set a user\'s password, read from standard input (checked as at creation); ends all their sessions.')
    .addOption(configOption())
    .action(async (email: string, opts: { config: string }) => {
      const password = await readStdin();
      await withStore(opts.config, async (s) => {
        const user = await requireUser(s, email);
        await setPassword(s, user.id, password, undefined);
        await recordCommand(s, 'users password', { orgId: null, targetId: user.id });
      });
      console.log(`changed the password of ${email.toLowerCase()}; their sessions have ended`);
    });
  for (const [name, active] of [['deactivate', false], ['activate', true]] as const) {
    users.command(`${name} <email>`)
      .description(active ? 'Reactivate a deactivated user: they can sign in again and their management tokens work again.'
        : 'Deactivate a user: they cannot sign in, their sessions end and their management tokens are refused, at once on every instance.')
      .addOption(configOption())
      .action(async (email: string, opts: { config: string }) => {
        const change = await withStore(opts.config, async (s) => {
          const user = await requireUser(s, email);
          const result = await setActive(s, user.id, active);
          if (result !== 'last_owner') await recordCommand(s, active ? 'users activate' : 'users deactivate', { orgId: null, targetId: user.id, before: { active: user.active }, after: { active } });
          return result;
        });
        if (change === 'last_owner') throw new Error(`${email} is the only active owner of an organization: make another member owner first`);
        console.log(`${active ? 'activated' : 'deactivated'} ${email.toLowerCase()}`);
      });
  }
}

/** `keys rotate PREFIX --grace SECONDS`. */
export function addKeyRotateCommand(keys: Command): void {
  keys.command('rotate <prefix>')
    .description('Give the key starting with PREFIX a new secret (same id, prefix, limits and usage); the old one keeps working for --grace seconds, then every instance refuses it. Prints the new key alone on the last line.')
    .requiredOption('--grace <seconds>', `how long the old secret keeps working (0 to ${MAX_ROTATION_GRACE_SECONDS})`, graceSeconds)
    .addOption(configOption())
    .action(async (prefix: string, opts: { grace: number; config: string }) => {
      const p = prefix.slice(0, 11);
      const r = await withStore(opts.config, async (s, inv) => {
        const key = await s.findApiKey(p);
        const rotated = key && (await rotateKey(s, inv, key.orgId, key.id, opts.grace, Date.now()));
        if (!rotated) throw new Error(`no live API key with prefix "${p}"`);
        // The new secret is printed once, never written to the audit row.
        await recordCommand(s, 'keys rotate', { orgId: key.orgId, targetId: key.id, after: { grace_seconds: opts.grace } });
        return rotated;
      });
      const until = new Date(r.record.previousExpiresAt ?? Date.now()).toISOString();
      console.log(`rotated key ${p}…: the old secret works until ${until}${r.pushed ? ' (every running instance told)' : ''}; store the new key now, it is not shown again:`);
      console.log(r.key);
    });
}
