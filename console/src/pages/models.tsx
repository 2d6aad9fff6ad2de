import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { get, type ListOf, type ModelRecord } from '../api';
import type { PageProps } from '../app';
import { int, perUnit } from '../format';
import { Page, Show, useLoad, Field } from '../ui';

const M = 1_000_000;

/** Prices of one model as people read them: per million tokens, per generation, per image, per request. */
function prices(m: ModelRecord): string[] {
  const p = m.pricing;
  const out: string[] = [];
  if (Number(p.prompt) > 0) out.push(`in ${perUnit(p.prompt, M)} / 1M tokens`);
  if (Number(p.completion) > 0) out.push(`out ${perUnit(p.completion, M)} / 1M tokens`);
  if (Number(p.audio_music_per_generation) > 0) out.push(`${perUnit(p.audio_music_per_generation, 1)} per generation`);
  if (Number(p.image) > 0) out.push(`${perUnit(p.image, 1)} per image`);
  if (Number(p.request) > 0) out.push(`${perUnit(p.request, 1)} per request`);
  if (Number(p.input_character) > 0) out.push(`${perUnit(p.input_character, M)} / 1M characters`);
  if (Number(p.audio_second) > 0) out.push(`${perUnit(p.audio_second, 60)} per minute of audio`);
  return out.length > 0 ? out : ['free'];
}

/** The model catalogue with prices (the same records as GET /v1/models). */
export function ModelsPage({ org }: PageProps): JSX.Element {
  const models = useLoad((signal) => get<ListOf<ModelRecord>>(`/orgs/${org.id}/models`, undefined, signal), [org.id]);
  const [filter, setFilter] = useState('');
  return (
    <Page title="Models">
      <div class="toolbar">
        <Field label="Filter models"><input type="search" value={filter} placeholder="name, provider or kind" onInput={(e) => setFilter(e.currentTarget.value)} /></Field>
      </div>
      <Show value={models}>
        {(d) => {
          const f = filter.trim().toLowerCase();
          const rows = d.data.filter((m) => !f || [m.id, m.name, m.modality, ...m.providers.map((p) => p.providerId)].some((s) => s.toLowerCase().includes(f)));
          return (
            <div class="scroll">
              <table>
                <caption class="sr-only">Models and their prices</caption>
                <thead><tr><th scope="col">Model</th><th scope="col">Kind</th><th scope="col">Providers</th><th scope="col" class="num">Context</th><th scope="col">Price</th></tr></thead>
                <tbody>
                  {rows.map((m) => (
                    <tr key={m.id}>
                      <td><code>{m.id}</code><div class="muted small">{m.name}{m.deprecated_at ? ` · deprecated ${m.deprecated_at.slice(0, 10)}` : ''}</div></td>
                      <td>{m.modality}</td>
                      <td>{[...new Set(m.providers.map((p) => p.providerId))].join(', ')}</td>
                      <td class="num">{m.context_length > 0 ? int(m.context_length) : '—'}</td>
                      <td>{prices(m).map((p) => <div key={p}>{p}</div>)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          );
        }}
      </Show>
    </Page>
  );
}
