import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { del, get, SIGNED_OUT_EVENT, type ListOf, type Me, type Org } from './api';
import { AuditPage } from './pages/audit';
import { AccountPage } from './pages/account';
import { CreditsPage } from './pages/credits';
import { DeploymentsPage } from './pages/deployments';
import { KeysPage } from './pages/keys';
import { LogDetailPage, LogsPage } from './pages/logs';
import { MembersPage } from './pages/members';
import { ModelsPage } from './pages/models';
import { MusicPage } from './pages/music';
import { OverviewPage } from './pages/overview';
import { ProviderKeysPage } from './pages/provider-keys';
import { SignIn } from './pages/sign-in';
import { UsagePage } from './pages/usage';
import { CachePage } from './pages/cache';
import { WebhooksPage } from './pages/webhooks';
import { Link, navigate, useLocation, type Location } from './router';
import { ErrorBox, Field } from './ui';

export interface PageProps { org: Org; me: Me; loc: Location; rest: string[] }

interface NavItem { page: string; label: string; show: (org: Org, me: Me) => boolean }
const admin = (o: Org): boolean => o.role === 'admin' || o.role === 'owner' || o.role === 'operator';
const NAV: NavItem[] = [
  { page: 'overview', label: 'Overview', show: () => true },
  { page: 'keys', label: 'Keys', show: () => true },
  { page: 'logs', label: 'Logs', show: () => true },
  { page: 'usage', label: 'Usage', show: () => true },
  { page: 'cache', label: 'Cache', show: () => true },
  { page: 'music', label: 'Music', show: () => true },
  { page: 'models', label: 'Models', show: () => true },
  { page: 'members', label: 'Members', show: () => true },
  { page: 'provider-keys', label: 'Provider keys', show: admin },
  { page: 'webhooks', label: 'Webhooks', show: admin },
  { page: 'credits', label: 'Credits', show: () => true },
  { page: 'audit', label: 'Audit', show: admin },
  // The instance's provider keys and hot reload: operators only (GET /api/v1/deployments).
  { page: 'deployments', label: 'Deployments', show: (_o, me) => me.operator },
  { page: 'account', label: 'Account', show: () => true },
];

type Theme = 'system' | 'light' | 'dark';
const THEME_KEY = 'tollgate-theme';

/** Sets the theme on <html> (no attribute: the system's); styles.css reads it. */
export function applyTheme(theme: Theme): void {
  if (theme === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

/** The stored choice, read when the console starts (main.tsx) and by the switch. */
export function storedTheme(): Theme {
  const t = localStorage.getItem(THEME_KEY);
  return t === 'light' || t === 'dark' ? t : 'system';
}

/** Light, dark or the system's: kept in this browser (localStorage), applied at once. */
function ThemeSwitch(): JSX.Element {
  const [theme, setTheme] = useState<Theme>(storedTheme);
  const choose = (t: Theme): void => {
    if (t === 'system') localStorage.removeItem(THEME_KEY);
    else localStorage.setItem(THEME_KEY, t);
    applyTheme(t);
    setTheme(t);
  };
  return (
    <Field label="Theme" class="theme-switch">
      <select value={theme} onChange={(e) => choose(e.currentTarget.value as Theme)}>
        <option value="system">System</option><option value="light">Light</option><option value="dark">Dark</option>
      </select>
    </Field>
  );
}

/** The console: the session decides between the sign-in form and the pages. */
export function App(): JSX.Element {
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    get<{ user: Me | null }>('/session').then((r) => setMe(r.user), setError);
    const out = (): void => setMe(null);
    window.addEventListener(SIGNED_OUT_EVENT, out);
    return () => window.removeEventListener(SIGNED_OUT_EVENT, out);
  }, []);
  if (error) return <main id="main"><ErrorBox error={error} /></main>;
  if (me === undefined) return <main id="main"><p class="muted">Loading…</p></main>;
  if (me === null) return <SignIn onSignedIn={setMe} />;
  return <Shell me={me} onSignedOut={() => setMe(null)} />;
}

function Shell({ me, onSignedOut }: { me: Me; onSignedOut: () => void }): JSX.Element {
  const loc = useLocation();
  const [orgs, setOrgs] = useState<Org[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [version, setVersion] = useState(0);
  const [loaded, setLoaded] = useState(-1);
  useEffect(() => {
    get<ListOf<Org>>('/orgs').then((r) => { setOrgs(r.data); setLoaded(version); }, setError);
  }, [version]);
  const parts = loc.path.split('/').filter(Boolean);
  const orgId = parts[0] === 'orgs' ? parts[1] : undefined;
  const pageName = parts[2] ?? 'overview';
  const org = orgs?.find((o) => o.id === orgId);
  useEffect(() => {
    // Not while the list reloads: a page may have just made the org it shows (an operator's new org).
    if (orgs?.[0] && !org && loaded === version) navigate(`/orgs/${orgs[0].id}/overview`, true);
  }, [orgs, org, loaded, version]);
  const signOut = async (): Promise<void> => {
    try {
      await del('/session');
    } finally {
      onSignedOut();
      navigate('/', true);
    }
  };
  const item = NAV.find((n) => n.page === pageName);
  const props = org ? { org, me, loc, rest: parts.slice(3) } : undefined;
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <span class="brand">Tollgate</span>
        {orgs && (me.operator || orgs.length > 1) ? (
          <Field label="Organization" class="org-switch">
            <select value={orgId} onChange={(e) => navigate(`/orgs/${e.currentTarget.value}/${pageName}`)}>
              {orgs.map((o) => <option key={o.id} value={o.id}>{o.name}</option>)}
            </select>
          </Field>
        ) : org ? <span class="org-name">{org.name}</span> : null}
        <span class="who">{me.email}{me.operator ? ' · operator' : org ? ` · ${org.role}` : ''}</span>
        <ThemeSwitch />
        <button type="button" class="secondary" onClick={() => void signOut()}>Sign out</button>
      </header>
      {org ? (
        <nav aria-label="Console">
          <ul>
            {NAV.filter((n) => n.show(org, me)).map((n) => (
              <li key={n.page}><Link to={`/orgs/${org.id}/${n.page}`} current={n.page === pageName}>{n.label}</Link></li>
            ))}
          </ul>
        </nav>
      ) : null}
      <main id="main">
        <ErrorBox error={error} />
        {orgs && orgs.length === 0 ? <p>You are not a member of any organization yet: ask an owner to add you.</p> : null}
        {!orgs && !error ? <p class="muted">Loading…</p> : null}
        {props && item?.show(props.org, me) ? <PageFor name={pageName} props={props} onOrgChanged={() => setVersion((v) => v + 1)} /> : null}
        {props && (!item?.show(props.org, me)) ? <p>No such page. <Link to={`/orgs/${props.org.id}/overview`}>Overview</Link></p> : null}
      </main>
    </>
  );
}

function PageFor({ name, props, onOrgChanged }: { name: string; props: PageProps; onOrgChanged: () => void }): JSX.Element {
  switch (name) {
    case 'keys': return <KeysPage {...props} />;
    case 'logs': return props.rest[0] ? <LogDetailPage {...props} id={props.rest[0]} /> : <LogsPage {...props} />;
    case 'usage': return <UsagePage {...props} />;
    case 'cache': return <CachePage {...props} />;
    case 'music': return <MusicPage {...props} />;
    case 'models': return <ModelsPage {...props} />;
    case 'members': return <MembersPage {...props} />;
    case 'provider-keys': return <ProviderKeysPage {...props} />;
    case 'webhooks': return <WebhooksPage {...props} />;
    case 'credits': return <CreditsPage {...props} onChanged={onOrgChanged} />;
    case 'audit': return <AuditPage {...props} />;
    case 'deployments': return <DeploymentsPage {...props} />;
    case 'account': return <AccountPage {...props} />;
    default: return <OverviewPage {...props} onOrgChanged={onOrgChanged} />;
  }
}
