import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/** Client-side routes under /console (the gateway answers every /console/* page with index.html). */
const BASE = '/console';
const CHANGE = 'tollgate:navigate';

export interface Location { path: string; query: URLSearchParams }

function read(): Location {
  const p = window.location.pathname;
  const path = p.startsWith(BASE) ? p.slice(BASE.length) || '/' : '/';
  return { path: path.length > 1 ? path.replace(/\/+$/, '') : path, query: new URLSearchParams(window.location.search) };
}

export function navigate(to: string, replace = false): void {
  const url = BASE + to;
  if (replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  window.dispatchEvent(new Event(CHANGE));
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const update = (): void => setLoc(read());
    window.addEventListener('popstate', update);
    window.addEventListener(CHANGE, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(CHANGE, update);
    };
  }, []);
  return loc;
}

/** An <a> that navigates in the app (a real link: opens in a new tab, keyboard-reachable). */
export function Link({ to, children, current, class: className }: { to: string; children: ComponentChildren; class?: string; current?: boolean }): JSX.Element {
  const onClick = (e: MouseEvent): void => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a class={className} href={BASE + to} onClick={onClick} aria-current={current ? 'page' : undefined}>{children}</a>;
}

/**
 * A list's filters kept in the page's address at `path` (shareable; back and forward restore
 * them), over cursor-paged results: the applied filters and the cursor, read from `loc`; the
 * form's `draft`, which follows the address (what the form shows is what is applied); `apply`
 * (the form's submit) and `clear` go to the first page; `pager` is what a Pager needs. `trim`
 * puts each value in the address without its surrounding spaces.
 */
export function useAddressFilters<K extends string>(keys: readonly K[], path: string, loc: Location, trim = false): {
  filters: Record<K, string>; cursor: string; draft: Record<K, string>; setDraft: (d: Record<K, string>) => void; apply: (e: Event) => void; clear: () => void;
  pager: { cursor: string; previous: string[]; setPrevious: (p: string[]) => void; go: (cursor: string) => void };
} {
  const filters = Object.fromEntries(keys.map((k) => [k, loc.query.get(k) ?? ''])) as Record<K, string>;
  const cursor = loc.query.get('cursor') ?? '';
  const [previous, setPrevious] = useState<string[]>([]);
  const [draft, setDraft] = useState<Record<K, string>>(filters);
  const applied = keys.map((k) => filters[k]).join('\n');
  useEffect(() => setDraft(filters), [applied]);
  const go = (f: Record<K, string>, c = ''): void => {
    const q = new URLSearchParams();
    for (const k of keys) {
      const v = trim ? f[k].trim() : f[k];
      if (v) q.set(k, v);
    }
    if (c) q.set('cursor', c);
    const s = q.toString();
    navigate(`${path}${s ? `?${s}` : ''}`);
  };
  const apply = (e: Event): void => {
    e.preventDefault();
    setPrevious([]);
    go(draft);
  };
  const clear = (): void => {
    const none = Object.fromEntries(keys.map((k) => [k, ''])) as Record<K, string>;
    setDraft(none);
    setPrevious([]);
    go(none);
  };
  return { filters, cursor, draft, setDraft, apply, clear, pager: { cursor, previous, setPrevious, go: (c) => go(filters, c) } };
}
