import { describe, expect, it } from 'vitest';
import { HookRegistry } from './hooks.js';
import { STAGES } from './stages.js';

describe('stages', () => {
  it('are declared once, in pipeline order', () => {
    expect(STAGES).toEqual(['pre-auth', 'auth', 'pre-upstream', 'upstream', 'post-upstream', 'billing', 'post-billing']);
  });

  it('refuses a hook on an unknown stage, naming the plugin and the known stages', () => {
    const hooks = new HookRegistry();
    expect(() => hooks.add('chat', 'pre-upsteam', () => undefined)).toThrow(
      /plugin "chat" registers a hook on unknown stage "pre-upsteam"; stages are: pre-auth, auth/,
    );
  });

  it('runs the hooks of a stage in registration order', async () => {
    const hooks = new HookRegistry();
    const seen: string[] = [];
    hooks.add('a', 'billing', () => { seen.push('a'); });
    hooks.add('b', 'billing', async () => { seen.push('b'); });
    hooks.add('c', 'auth', () => { seen.push('c'); });
    await hooks.run('billing', {} as never);
    expect(seen).toEqual(['a', 'b']);
  });
});
