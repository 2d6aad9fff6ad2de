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
