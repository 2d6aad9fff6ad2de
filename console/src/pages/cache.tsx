import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, get, patch, type CacheSetting, type CacheStats } from '../api';
import type { PageProps } from '../app';
import { int, pct, usd } from '../format';
import { navigate } from '../router';
import { EditDialog, Field, Page, Show, useLoad, useSubmit } from '../ui';

/** One line for a cache setting: "exact, 600 s, hits at 10 %" or "off". */
export function cacheSummary(c: CacheSetting | null | undefined, none = 'off'): string {
  if (!c) return none;
  const parts: string[] = [c.mode ?? 'off'];
  if (c.ttl_s !== undefined) parts.push(`${int(c.ttl_s)} s`);
  if (c.scope === 'project') parts.push('this project only');
  if (c.hit_price) parts.push(`hits at ${pct(c.hit_price)}`);
  if (c.threshold !== undefined) parts.push(`similarity ≥ ${c.threshold}`);
  if (c.cache_all) parts.push('cache all');
  return parts.join(', ');
}

/**
 * Edits the response cache of a project or a key (`PATCH path {cache}`, docs/cache.md): mode,
 * TTL, scope, the fraction a hit is charged, and the semantic threshold; "Clear" sends null.
 */
export function EditCache(props: { title: string; path: string; value: CacheSetting | null | undefined; open: boolean; onClose: () => void; onSaved: () => void }): JSX.Element {
  const [mode, setMode] = useState<NonNullable<CacheSetting['mode']>>('off');
  const [ttl, setTtl] = useState('');
  const [scope, setScope] = useState<'org' | 'project'>('org');
  const [price, setPrice] = useState('');
  const [threshold, setThreshold] = useState('');
  const submission = useSubmit();
  const { error, busy } = submission;
  const fill = (): void => {
    const v = props.value ?? {};
    setMode(v.mode ?? 'off');
    setTtl(v.ttl_s === undefined ? '' : String(v.ttl_s));
    setScope(v.scope ?? 'org');
    setPrice(v.hit_price === undefined ? '' : String(v.hit_price * 100));
    setThreshold(v.threshold === undefined ? '' : String(v.threshold));
  };
  const save = (cache: CacheSetting | null): Promise<void> => submission.run(async () => {
    await patch(props.path, { cache });
    props.onSaved();
    props.onClose();
  });
  const submit = (): void => {
    const cache: CacheSetting = { mode, scope };
    if (ttl.trim()) cache.ttl_s = Number(ttl);
    if (price.trim()) cache.hit_price = Number(price) / 100;
    if (threshold.trim()) cache.threshold = Number(threshold);
    void save(cache);
  };
  const fieldError = (param: string): string | undefined => (error instanceof ApiError && error.param?.startsWith(`cache`) && error.param.includes(param) ? error.message : undefined);
  return (
    <EditDialog open={props.open} onOpen={fill} deps={[props.value]} submission={submission} title={props.title} save="Save cache" onSubmit={submit} onClose={props.onClose}
      note="Repeated requests are answered from the cache with no upstream call, never across organizations. A key's setting wins over its project's."
      more={<button type="button" class="secondary" disabled={busy} onClick={() => void save(null)}>Clear</button>}>
      <div class="grid">
        <Field label="Mode">
          <select value={mode} onChange={(e) => setMode(e.currentTarget.value as typeof mode)}>
            <option value="off">off</option><option value="exact">exact</option><option value="semantic">semantic</option>
          </select>
        </Field>
        <Field label="Time to live (seconds)" error={fieldError('ttl_s')}>
          <input type="number" min="1" max="2592000" step="1" value={ttl} onInput={(e) => setTtl(e.currentTarget.value)} />
        </Field>
        <Field label="Shared by">
          <select value={scope} onChange={(e) => setScope(e.currentTarget.value as 'org' | 'project')}>
            <option value="org">every project of the organization</option><option value="project">this project only</option>
          </select>
        </Field>
        <Field label="A hit is charged (% of the original cost)" error={fieldError('hit_price')}>
          <input type="number" min="0" max="100" step="any" value={price} onInput={(e) => setPrice(e.currentTarget.value)} />
        </Field>
        <Field label="Semantic similarity threshold (0–1)" error={fieldError('threshold')}>
          <input type="number" min="0" max="1" step="0.01" value={threshold} onInput={(e) => setThreshold(e.currentTarget.value)} />
        </Field>
      </div>
    </EditDialog>
  );
}

/** Hit rate and money saved per project and day (GET /orgs/{org}/cache). */
export function CachePage({ org, loc }: PageProps): JSX.Element {
  const days = Number(loc.query.get('days')) || 30;
  const stats = useLoad((signal) => get<CacheStats>(`/orgs/${org.id}/cache`, { days: String(days) }, signal), [org.id, days]);
  return (
    <Page title="Response cache">
      <div class="toolbar">
        <Field label="Period">
          <select value={String(days)} onChange={(e) => navigate(`/orgs/${org.id}/cache?days=${e.currentTarget.value}`)}>
            <option value="7">7 days</option><option value="30">30 days</option><option value="90">90 days</option>
          </select>
        </Field>
      </div>
      <Show value={stats}>
        {(s) => (
          <>
            <p>Saved <strong data-testid="cache-saved">{usd(s.saved_usd)}</strong> from {s.from} to {s.to} (UTC).</p>
            <div class="scroll">
              <table>
                <caption class="sr-only">Response cache per project and day</caption>
                <thead><tr><th scope="col">Day</th><th scope="col">Project</th><th scope="col" class="num">Hits</th><th scope="col" class="num">Misses</th><th scope="col" class="num">Bypasses</th><th scope="col" class="num">Hit rate</th><th scope="col" class="num">Saved</th><th scope="col" class="num">Hits charged</th></tr></thead>
                <tbody>
                  {s.data.length === 0 ? <tr><td colSpan={8} class="muted">No request went through the cache in this period: turn it on for a project on the Keys page.</td></tr> : null}
                  {s.data.map((r) => (
                    <tr key={`${r.day}-${r.project_id ?? ''}`}>
                      <td>{r.day}</td><td>{r.project_name ?? '—'}</td><td class="num">{int(r.hits)}</td><td class="num">{int(r.misses)}</td>
                      <td class="num">{int(r.bypasses)}</td><td class="num">{pct(r.hit_rate)}</td><td class="num">{usd(r.saved_usd)}</td><td class="num">{usd(r.charged_usd)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </Show>
    </Page>
  );
}
