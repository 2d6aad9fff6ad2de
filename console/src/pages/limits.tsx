import { cacheSummary, EditCache } from './cache';
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get, patch, type BudgetPeriod, type LimitMode, type LimitUsage, type Limits, type Project, type ProjectDetail, type UnsupportedParams } from '../api';
import { int, usd, when } from '../format';
import { EditDialog, Field, Show, useLoad, useSubmit } from '../ui';

/*
 * Limits of keys and projects (docs/limits.md) on the Keys page: the fields shared by the
 * create-key form and the edit dialogs, how limits and a budget's spend read, and the
 * project's own limits.
 */

/** The limit fields as typed (strings: an empty field is no limit). */
export interface LimitsDraft { rpm: string; tpm: string; concurrent: string; budget: string; period: BudgetPeriod; mode: LimitMode | '' }
type DraftField = keyof LimitsDraft;

export const EMPTY_LIMITS: LimitsDraft = { rpm: '', tpm: '', concurrent: '', budget: '', period: 'month', mode: '' };

function draftOf(l: Limits): LimitsDraft {
  const s = (n: number | null): string => (n === null ? '' : String(n));
  return { rpm: s(l.rpm), tpm: s(l.tpm), concurrent: s(l.max_concurrent), budget: s(l.budget_usd), period: l.budget_period ?? 'month', mode: l.mode ?? '' };
}

const num = (v: string): number => Number(v.trim());

/** `limits` for creation: only the filled fields (a field left out is no limit). */
export function createLimits(d: LimitsDraft): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  if (d.rpm.trim()) out.rpm = num(d.rpm);
  if (d.tpm.trim()) out.tpm = num(d.tpm);
  if (d.concurrent.trim()) out.max_concurrent = num(d.concurrent);
  if (d.budget.trim()) Object.assign(out, { budget_usd: d.budget.trim(), budget_period: d.period });
  if (d.mode) out.mode = d.mode;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** `limits` for PATCH: every field, null where emptied (removes that limit); no budget removes the budget with its period. */
function patchLimits(d: LimitsDraft): Record<string, unknown> {
  const or = (v: string): number | null => (v.trim() ? num(v) : null);
  return {
    rpm: or(d.rpm), tpm: or(d.tpm), max_concurrent: or(d.concurrent), mode: d.mode || null,
    ...(d.budget.trim() ? { budget_usd: d.budget.trim(), budget_period: d.period } : { budget_usd: null }),
  };
}

const PARAM_FIELD: Record<string, DraftField> = {
  'limits.rpm': 'rpm', 'limits.tpm': 'tpm', 'limits.max_concurrent': 'concurrent', 'limits.budget_usd': 'budget', 'limits.budget_period': 'period', 'limits.mode': 'mode',
};

/** The limit field a 400 names in `param`, if any (its message is then shown next to that field). */
export function limitFieldOf(e: unknown): DraftField | undefined {
  return e instanceof ApiError && e.param ? PARAM_FIELD[e.param] : undefined;
}

/** After a failed submit, moves focus to the first control marked invalid (so a keyboard or screen reader user lands on it). */
export function useFocusInvalid(error: unknown): { current: HTMLFormElement | null } {
  const ref = useRef<HTMLFormElement>(null);
  useEffect(() => {
    if (error) ref.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [error]);
  return ref;
}

/** The limit controls (five limits and the mode); `error` is a 400 from the API, shown next to the field its `param` names. */
export function LimitFields({ value, onChange, error }: { value: LimitsDraft; onChange: (d: LimitsDraft) => void; error: unknown }): JSX.Element {
  const bad = limitFieldOf(error);
  const msg = (f: DraftField): string | undefined => (bad === f && error instanceof Error ? error.message : undefined);
  const set = (k: DraftField) => (e: { currentTarget: HTMLInputElement | HTMLSelectElement }) => onChange({ ...value, [k]: e.currentTarget.value });
  const count = (label: string, k: DraftField) => (
    <Field label={label} error={msg(k)}><input type="number" min="0" step="1" inputMode="numeric" value={value[k]} onInput={set(k)} /></Field>
  );
  return (
    <div class="grid">
      {count('Requests per minute', 'rpm')}
      {count('Tokens per minute', 'tpm')}
      {count('Max concurrent requests', 'concurrent')}
      <Field label="Budget (USD)" error={msg('budget')}><input type="number" min="0" step="0.000001" inputMode="decimal" value={value.budget} onInput={set('budget')} /></Field>
      <Field label="Budget period" error={msg('period')}>
        <select value={value.period} onChange={set('period')}>
          <option value="day">day</option><option value="month">month</option><option value="total">total</option>
        </select>
      </Field>
      <Field label="Counted across instances" error={msg('mode')}>
        <select value={value.mode} onChange={set('mode')}>
          <option value="">automatic (lease for large limits)</option><option value="exact">exact (one Redis call per request)</option><option value="lease">lease (a share per instance)</option>
        </select>
      </Field>
    </div>
  );
}

const PER: Record<BudgetPeriod, string> = { day: 'per day', month: 'per month', total: 'in total' };

/** Each limit as a short phrase ("2 requests/min", "$1.00 per day"); empty when nothing is limited. */
function limitPhrases(l: Limits): string[] {
  const out: string[] = [];
  if (l.rpm !== null) out.push(`${int(l.rpm)} requests/min`);
  if (l.tpm !== null) out.push(`${int(l.tpm)} tokens/min`);
  if (l.max_concurrent !== null) out.push(`${int(l.max_concurrent)} concurrent`);
  if (l.budget_usd !== null) out.push(`${usd(l.budget_usd)} ${PER[l.budget_period ?? 'total']}`);
  if (l.mode) out.push(`${l.mode} mode`);
  return out;
}

export function LimitsList({ limits }: { limits: Limits }): JSX.Element {
  const p = limitPhrases(limits);
  if (p.length === 0) return <span class="muted">none</span>;
  return <ul class="limits-list">{p.map((x) => <li key={x}>{x}</li>)}</ul>;
}

/** A budget's spend this period and when it resets, from `usage.budget`. */
export function BudgetSpend({ usage, failed = false }: { usage: LimitUsage | null | undefined; failed?: boolean }): JSX.Element {
  if (failed) return <span class="muted">could not be read</span>;
  if (usage === undefined) return <span class="muted">…</span>;
  if (usage === null) return <span class="muted">unavailable (limits store not answering)</span>;
  const b = usage.budget;
  if (!b) return <span class="muted">—</span>;
  const period = b.period === 'total' ? 'in total' : `this ${b.period}`;
  return (
    <span>
      {usd(b.spent_usd)} of {usd(b.limit_usd)} {period}
      {b.held_usd > 0 ? <>, {usd(b.held_usd)} held</> : null}
      <br /><span class="muted small">{b.resets_at ? `resets ${when(b.resets_at)}` : 'never resets'}</span>
    </span>
  );
}

/** GET /orgs/{org}/budget-check: the dearest chat model whose one-request bound is over the budget (docs/limits.md). */
interface BudgetCheck {
  shortfall: { model: string; output_tokens: number; bound_usd: number; models_over: number; models_total: number; default_max_tokens: number | null } | null;
}

/**
 * A warning when a budget is below what one chat request reserves (issue 35): a request
 * without max_tokens holds the model's whole output window (or the project's default
 * max_tokens), so a smaller budget refuses it however little it would cost.
 */
export function BudgetShortfall({ orgId, scope, id, tick }: { orgId: string; scope: 'key' | 'project'; id: string; tick: number }): JSX.Element | null {
  const check = useLoad((signal) => get<BudgetCheck>(`/orgs/${orgId}/budget-check`, { [scope]: id }, signal), [orgId, scope, id, tick]);
  const s = check.data?.shortfall;
  if (!s) return null;
  const bound = s.default_max_tokens === null ? 'its whole output window' : `the default max_tokens (${int(s.default_max_tokens)})`;
  return (
    <p class="warning small" role="note" data-testid="budget-shortfall">
      Below one request's bound on {int(s.models_over)} of {int(s.models_total)} chat models: a request without max_tokens reserves {bound}
      {' '}({s.model}: {int(s.output_tokens)} output tokens, {usd(s.bound_usd)}) and is refused. Set a smaller default max_tokens for the project, or send max_tokens.
    </p>
  );
}

/**
 * A modal dialog that edits the limits of a key or a project (`PATCH path {limits}`): every field is sent,
 * an emptied one as null (removes that limit). A 400 shows next to the field it names. A project's
 * dialog (`project` given) also edits its chat settings (docs/chat.md): the default max_tokens
 * (emptied: null) and the unsupported_params policy ("gateway default": null).
 */
export function EditLimits(props: {
  title: string; path: string; limits: Limits | undefined; project?: Pick<Project, 'default_max_tokens' | 'unsupported_params'>;
  onClose: () => void; onSaved: () => void;
}): JSX.Element {
  const [draft, setDraft] = useState<LimitsDraft>(EMPTY_LIMITS);
  const [maxTokens, setMaxTokens] = useState('');
  const [policy, setPolicy] = useState<UnsupportedParams | ''>('');
  const { project } = props;
  const submission = useSubmit();
  const { error } = submission;
  const form = useFocusInvalid(error);
  const fill = (): void => {
    if (props.limits) setDraft(draftOf(props.limits));
    setMaxTokens(project?.default_max_tokens == null ? '' : String(project.default_max_tokens));
    setPolicy(project?.unsupported_params ?? '');
  };
  const paramError = (param: string): string | undefined => (error instanceof ApiError && error.param === param ? error.message : undefined);
  const maxTokensError = paramError('default_max_tokens');
  const policyError = paramError('unsupported_params');
  const submit = (): void => {
    void submission.run(async () => {
      const settings = project ? { default_max_tokens: maxTokens.trim() ? num(maxTokens) : null, unsupported_params: policy || null } : {};
      await patch(props.path, { limits: patchLimits(draft), ...settings });
      props.onSaved();
      props.onClose();
    });
  };
  return (
    <EditDialog open={props.limits !== undefined} onOpen={fill} deps={[props.limits, project]} submission={submission} title={props.title} save="Save limits"
      formRef={form} onSubmit={submit} onClose={props.onClose}
      note="An empty field is no limit. A change applies at once on every instance; what was already counted stays counted."
      errorAtField={Boolean(limitFieldOf(error) || maxTokensError || policyError)}>
      <LimitFields value={draft} onChange={setDraft} error={error} />
      {project ? (
        <div class="grid">
          <Field label="Default max_tokens" error={maxTokensError}>
            <input type="number" min="1" max="1000000" step="1" inputMode="numeric" value={maxTokens} onInput={(e) => setMaxTokens(e.currentTarget.value)} />
          </Field>
          <p class="muted small">Sent as the output bound of chat requests that give no max_tokens (Claude models refuse them otherwise). Empty: gateway.yaml's default, if it sets one.</p>
          <Field label="Unsupported parameters" error={policyError}>
            <select value={policy} onChange={(e) => setPolicy(e.currentTarget.value as UnsupportedParams | '')}>
              <option value="">Gateway default</option>
              <option value="translate">translate</option>
              <option value="drop">drop</option>
              <option value="error">error</option>
            </select>
          </Field>
          <p class="muted small">What a chat request's parameters that the model's provider cannot take become: translated where the gateway can, dropped, or refused with 400. Over gateway.yaml's and the provider files' policy.</p>
        </div>
      ) : null}
    </EditDialog>
  );
}

/** The project's own limits (shared by all its keys) with their current counts; admins edit them. */
export function ProjectLimits({ orgId, projectId, admin, tick }: { orgId: string; projectId: string; admin: boolean; tick: number }): JSX.Element {
  const detail = useLoad((signal) => get<ProjectDetail>(`/orgs/${orgId}/projects/${projectId}`, undefined, signal), [orgId, projectId, tick]);
  const [editing, setEditing] = useState<Limits | undefined>(undefined);
  const [editingCache, setEditingCache] = useState(false);
  return (
    <section class="card" aria-labelledby="project-limits-title">
      <div class="page-head">
        <h2 id="project-limits-title">Project limits</h2>
        {admin && detail.data ? (
          <div class="actions">
            <button type="button" class="secondary small" onClick={() => setEditing(detail.data?.limits)}>Edit project limits</button>
            <button type="button" class="secondary small" onClick={() => setEditingCache(true)}>Edit response cache</button>
          </div>
        ) : null}
      </div>
      <Show value={detail}>
        {(p) => (
          <>
            <p class="muted small">Shared by every key of “{p.name}”: a request counts against its key's limits and these.</p>
            <dl class="details">
              <dt>Limits</dt><dd><LimitsList limits={p.limits} /></dd>
              {p.usage?.rpm ? <><dt>Requests this minute</dt><dd>{int(p.usage.rpm.used)} of {int(p.usage.rpm.limit)}</dd></> : null}
              {p.usage?.tpm ? <><dt>Tokens this minute</dt><dd>{int(p.usage.tpm.used)} of {int(p.usage.tpm.limit)}</dd></> : null}
              {p.limits.budget_usd !== null ? <><dt>Budget</dt><dd><BudgetSpend usage={p.usage} /><BudgetShortfall orgId={orgId} scope="project" id={projectId} tick={tick} /></dd></> : null}
              <dt>Default max_tokens</dt><dd>{p.default_max_tokens === null ? <span class="muted">not set</span> : int(p.default_max_tokens)}</dd>
              <dt>Unsupported parameters</dt><dd>{p.unsupported_params ?? <span class="muted">gateway default</span>}</dd>
              <dt>Response cache</dt><dd data-testid="project-cache">{cacheSummary(p.cache)}</dd>
            </dl>
          </>
        )}
      </Show>
      <EditLimits title="Edit project limits" path={`/orgs/${orgId}/projects/${projectId}`} limits={editing} project={detail.data}
        onClose={() => setEditing(undefined)} onSaved={detail.reload} />
      <EditCache title="Response cache of the project" path={`/orgs/${orgId}/projects/${projectId}`} value={detail.data?.cache} open={editingCache}
        onClose={() => setEditingCache(false)} onSaved={detail.reload} />
    </section>
  );
}
