import { cloneElement, type ComponentChildren, type JSX, type Ref, type VNode } from 'preact';
import { useCallback, useEffect, useId, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';

/** Data loaded from the API: re-read when `deps` change or `reload()` is called. */
export interface Loaded<T> { data: T | undefined; error: Error | undefined; loading: boolean; reload: () => void }

export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: Error | undefined; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(ctl.signal).then(
      (data) => !ctl.signal.aborted && setState({ data, error: undefined, loading: false }),
      (error: Error) => !ctl.signal.aborted && setState({ data: undefined, error, loading: false }),
    );
    return () => ctl.abort();
    // The caller's deps name what the load reads (the load itself is a new function each render).
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/**
 * A form control with its label, tied by id (so the control's name is the label alone, not the label plus its value);
 * `error` is shown under the control and tied to it (aria-describedby, aria-invalid).
 */
export function Field({ label, class: className, error, children }: { label: string; class?: string; error?: string | undefined; children: VNode<{ id?: string }> }): JSX.Element {
  const id = useId();
  const control = error ? cloneElement(children, { id, 'aria-invalid': 'true', 'aria-describedby': `${id}-error` } as { id: string }) : cloneElement(children, { id });
  return (
    <div class={className ? `field ${className}` : 'field'}>
      <label for={id}>{label}</label>
      {control}
      {error ? <p class="field-error" id={`${id}-error`}>{fieldMessage(error)}</p> : null}
    </div>
  );
}

/**
 * An API error's message as shown under its field: without a leading quoted field path
 * (`"allowed_models[0]": `, `"limits.rpm" `), which the field's label says better, and then
 * capitalized. Any other message is shown as the API wrote it: most are words already, and
 * one that starts with a path of its own (`guardrails[0]: …`, the entry of a JSON list that
 * is wrong) keeps it as written, since the label cannot say which entry.
 */
function fieldMessage(message: string): string {
  const text = message.replace(/^"[^"]+":?\s*/, '');
  if (text === message) return message;
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.code === 'http_error' ? e.message : `${e.message} (${e.code})`;
  return e instanceof Error ? e.message : String(e);
}

export function ErrorBox({ error }: { error: unknown }): JSX.Element | null {
  if (!error) return null;
  return <p class="error" role="alert">{errorText(error)}</p>;
}

/** Loading, error or the content of a Loaded value. */
export function Show<T>({ value, children }: { value: Loaded<T>; children: (data: T) => ComponentChildren }): JSX.Element {
  if (value.error) return <ErrorBox error={value.error} />;
  if (value.data === undefined) return <p class="muted" aria-live="polite">Loading…</p>;
  return <>{children(value.data)}</>;
}

export function Page({ title, actions, children }: { title: string; actions?: ComponentChildren; children: ComponentChildren }): JSX.Element {
  useEffect(() => {
    document.title = `${title} · Tollgate console`;
  }, [title]);
  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <h1 id="page-title" tabIndex={-1}>{title}</h1>
        {actions ? <div class="actions">{actions}</div> : null}
      </div>
      {children}
    </section>
  );
}

export function Stat({ label, value, hint }: { label: string; value: string; hint?: string }): JSX.Element {
  return (
    <div class="stat">
      <div class="stat-label">{label}</div>
      <div class="stat-value">{value}</div>
      {hint ? <div class="stat-hint">{hint}</div> : null}
    </div>
  );
}

/**
 * Shows a <dialog> (the ref's) as a modal while `open`, and closes it when not. `onOpen` runs
 * when it opens, and again when one of `deps` changes while it is open.
 */
function useModal(open: boolean, onOpen: () => void = () => undefined, deps: readonly unknown[] = []): Ref<HTMLDialogElement> {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open) {
      onOpen();
      if (!d.open) d.showModal();
    }
    if (!open && d.open) d.close();
    // Not onOpen: a new function each render, it would refill the fields at every keystroke.
  }, [open, ...deps]);
  return ref;
}

/**
 * A confirmation in a modal <dialog> (focus is kept inside it, Escape cancels); `onConfirm`
 * runs when the person confirms.
 */
export function Confirm(props: { open: boolean; title: string; children: ComponentChildren; confirm: string; onConfirm: () => void; onClose: () => void }): JSX.Element {
  const ref = useModal(props.open);
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onClose={props.onClose} onCancel={props.onClose}>
      <h2 id="confirm-title">{props.title}</h2>
      <div>{props.children}</div>
      <div class="actions">
        <button type="button" class="danger" onClick={() => { props.onConfirm(); props.onClose(); }}>{props.confirm}</button>
        {/* biome-ignore lint/a11y/noAutofocus: showModal() would focus the destructive button first; the dialog opens on Cancel (WAI-ARIA dialog pattern) */}
        <button type="button" class="secondary" onClick={props.onClose} autoFocus>Cancel</button>
      </div>
    </dialog>
  );
}

export function Status({ code }: { code: number }): JSX.Element {
  return <span class={`badge ${code >= 400 ? 'bad' : 'good'}`}>{code}</span>;
}

/** A button that copies text and says so (for a key shown once). */
export function CopyButton({ text, label }: { text: string; label: string }): JSX.Element {
  const [done, setDone] = useState<'' | 'Copied' | 'Copy failed: select the text and copy it'>('');
  const copy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(text);
      setDone('Copied');
    } catch {
      setDone('Copy failed: select the text and copy it');
    }
  };
  return (
    <>
      <button type="button" onClick={() => void copy()}>{label}</button>
      <span role="status" class="muted">{done}</span>
    </>
  );
}

/** Newer / Older over a cursor-paged list; `previous` is the stack of the cursors walked through. */
export function Pager(props: { label: string; cursor: string; next: string | null; previous: string[]; setPrevious: (p: string[]) => void; go: (cursor: string) => void }): JSX.Element {
  const { cursor, next, previous, setPrevious, go } = props;
  return (
    <nav class="pager" aria-label={props.label}>
      <button type="button" class="secondary" disabled={!cursor} onClick={() => { const prev = previous.slice(0, -1); go(previous[previous.length - 1] ?? ''); setPrevious(prev); }}>Newer</button>
      <button type="button" class="secondary" disabled={!next} onClick={() => { setPrevious([...previous, cursor]); go(next ?? ''); }}>Older</button>
    </nav>
  );
}

/** A change made from a page: its error or its success message, and the data reloaded after it. */
export function useAction(reload: () => void): { act: (work: () => Promise<unknown>, message: string) => Promise<void>; error: unknown; done: string } {
  const { error, run } = useSubmit();
  const [done, setDone] = useState('');
  const act = (work: () => Promise<unknown>, message: string): Promise<void> => {
    setDone('');
    return run(async () => {
      await work();
      setDone(message);
      reload();
    });
  };
  return { act, error, done };
}

/** A form's submission: what it failed with (an API error is shown at its field or in an ErrorBox), and whether it is under way. */
export interface Submission {
  error: unknown;
  busy: boolean;
  /** Sets the error, e.g. one found before sending, or none (undefined). */
  setError: (error: unknown) => void;
  /** Clears the last error, is busy while `work` runs, and keeps what it throws. */
  run: (work: () => Promise<unknown>) => Promise<void>;
}

export function useSubmit(): Submission {
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const run = async (work: () => Promise<unknown>): Promise<void> => {
    setError(undefined);
    setBusy(true);
    try {
      await work();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, setError, run };
}

/**
 * A modal dialog that edits settings with one PATCH (a key's or a project's response cache,
 * limits, guardrails): shown while `open`, its fields filled by `onOpen` each time it opens (and
 * again when `deps` change while it is open, with the last error cleared); then its title, a
 * note, the fields, the error unless a field shows it (`errorAtField`), Save (`save`), any
 * `more` buttons, and Cancel. Escape closes it as Cancel does.
 */
export function EditDialog(props: {
  open: boolean; onOpen: () => void; deps: readonly unknown[]; submission: Submission;
  title: string; note: ComponentChildren; save: string; errorAtField?: boolean; more?: ComponentChildren;
  formRef?: Ref<HTMLFormElement>; onSubmit: () => void; onClose: () => void; children: ComponentChildren;
}): JSX.Element {
  const { submission, onClose } = props;
  const titleId = useId();
  const ref = useModal(props.open, () => {
    props.onOpen();
    submission.setError(undefined);
  }, props.deps);
  return (
    <dialog ref={ref} aria-labelledby={titleId} onClose={onClose} onCancel={onClose}>
      <form ref={props.formRef} onSubmit={(e) => { e.preventDefault(); props.onSubmit(); }}>
        <h2 id={titleId}>{props.title}</h2>
        <p class="muted small">{props.note}</p>
        {props.children}
        {props.errorAtField ? null : <ErrorBox error={submission.error} />}
        <div class="actions">
          <button type="submit" disabled={submission.busy}>{props.save}</button>
          {props.more}
          <button type="button" class="secondary" onClick={onClose}>Cancel</button>
        </div>
      </form>
    </dialog>
  );
}
