// The `guardrails` scenario of bench/run.mjs: what a project's `pii` and `regex`
// guardrails (docs/guardrails.md) add to a request with a 4 KB prompt. The gateway's own
// pre-upstream hook (dist/src/guardrails/hook.js) runs in this process on a chat request's
// text slots, as the pipeline calls it, each iteration on a fresh copy of the body (masking
// rewrites it): the time with the guardrails on, and with a project that has none.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dist = (p) => import(join(ROOT, 'dist', p));

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/** A 4 KB conversation with the PII a support chat holds: two emails, a phone, a card, an order code. */
function prompt4k() {
  const filler = 'The customer asked about the delivery window for the replacement part and whether the warranty covers it. ';
  let text = 'Hello, I am Jane (jane.doe@example.com, +1 415 555 0100). My card 4111 1111 1111 1111 was charged twice for order PRJ-2041. ';
  while (text.length < 3900) text += filler;
  return `${text}Please answer to support@example.org.`.slice(0, 4096);
}

export async function guardrailsScenario({ say, results, quick }) {
  const { guardrailsHook } = await dist('src/guardrails/hook.js');
  const { jsonTextSlots } = await dist('src/guardrails/slots.js');
  const n = quick ? 2_000 : 20_000;
  const body = { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'You are a helpful support agent.' }, { role: 'user', content: prompt4k() }] };
  const hook = guardrailsHook({ catalog: undefined, upstream: undefined });
  const guardrails = [{ type: 'pii', action: 'mask', restore: true }, { type: 'regex', action: 'mask', patterns: ['PRJ-\\d{4}'], label: 'order' }];
  const off = { mode: 'off', retention_days: 30, max_bytes: 65536 };
  const run = async (project) => {
    const times = [];
    for (let i = 0; i < n; i++) {
      const copy = structuredClone(body);
      const ex = { id: `req_${i}`, modality: 'chat', org: { id: 'org_b' }, project, prompt: copy.messages[1].content, abort: new AbortController() };
      const request = { model: copy.model, prompt: ex.prompt };
      const view = { texts: () => jsonTextSlots(copy), body: () => copy };
      const t = process.hrtime.bigint();
      await hook(ex, request, view);
      times.push(Number(process.hrtime.bigint() - t) / 1000);
      if (i === 0 && project.guardrails.length > 0 && JSON.stringify(copy).includes('jane.doe@example.com')) throw new Error('guardrails bench: the email was not masked');
    }
    return { n, p50: pct(times, 50), p99: pct(times, 99) };
  };
  await run({ id: 'prj_b', guardrails, bodyLogging: off }); // warm-up
  const none = await run({ id: 'prj_n', guardrails: [], bodyLogging: off });
  const on = await run({ id: 'prj_b', guardrails, bodyLogging: off });
  results.guardrails = { promptBytes: Buffer.byteLength(body.messages[1].content), none, on };
  say(`guardrails: pii + regex on a 4 KB prompt p50 ${on.p50.toFixed(1)} µs (none: ${none.p50.toFixed(1)} µs), p99 ${on.p99.toFixed(1)} µs`);
}

export function guardrailsMarkdown(g) {
  const f = (x) => (Number.isFinite(x) ? x.toFixed(1) : '—');
  return [
    `The pre-upstream hook on a chat request whose user message is ${g.promptBytes} bytes with two emails, a phone, a card and an order code (all masked), ${g.on.n} sequential requests in the benchmark process; microseconds.`,
    '',
    '| project | p50 | p99 |',
    '|---|---:|---:|',
    `| no guardrails | ${f(g.none.p50)} | ${f(g.none.p99)} |`,
    `| \`pii\` (mask, restore) + \`regex\` (mask) | ${f(g.on.p50)} | ${f(g.on.p99)} |`,
    '',
    `Target: at most 1 ms (1000 µs) added at p50: ${g.on.p50 - g.none.p50 <= 1000 ? 'met' : 'NOT met'} (+${f(g.on.p50 - g.none.p50)} µs).`,
  ].join('\n');
}
