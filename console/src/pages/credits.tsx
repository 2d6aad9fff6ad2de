import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { get, post, type Credit, type Credits } from '../api';
import type { PageProps } from '../app';
import { usd, when } from '../format';
import { ErrorBox, Page, Stat, Field, useSubmit } from '../ui';

/** The balance and the credit ledger (paged); operators add or remove credits. */
export function CreditsPage({ org, me, onChanged }: PageProps & { onChanged: () => void }): JSX.Element {
  const [balance, setBalance] = useState<number | undefined>(undefined);
  const [rows, setRows] = useState<Credit[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const load = async (cursor?: string): Promise<void> => {
    setError(undefined);
    try {
      const c = await get<Credits>(`/orgs/${org.id}/credits`, { limit: 50, cursor });
      setBalance(c.balance_usd);
      setRows((r) => (cursor ? [...r, ...c.data] : c.data));
      setNext(c.next_cursor);
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => {
    void load();
  }, [org.id]);
  return (
    <Page title="Credits">
      <div class="stats"><Stat label="Balance" value={balance === undefined ? '…' : usd(balance)} hint={org.name} /></div>
      {me.operator ? <AddCredits orgId={org.id} onAdded={() => { void load(); onChanged(); }} /> : null}
      <ErrorBox error={error} />
      <h2>Ledger</h2>
      <div class="scroll">
        <table>
          <thead><tr><th scope="col">When</th><th scope="col" class="num">Amount</th><th scope="col">Note</th><th scope="col">By</th></tr></thead>
          <tbody>
            {rows.length === 0 ? <tr><td colSpan={4} class="muted">No credit entries.</td></tr> : null}
            {rows.map((c) => <tr key={c.id}><td>{when(c.created_at)}</td><td class="num">{usd(c.amount_usd)}</td><td>{c.note ?? ''}</td><td>{c.created_by?.email ?? 'the gateway (command line or first start)'}</td></tr>)}
          </tbody>
        </table>
      </div>
      {next ? <p><button type="button" class="secondary" onClick={() => void load(next)}>Older entries</button></p> : null}
    </Page>
  );
}

function AddCredits({ orgId, onAdded }: { orgId: string; onAdded: () => void }): JSX.Element {
  const [amount, setAmount] = useState('');
  const [note, setNote] = useState('');
  const { error, run } = useSubmit();
  const submit = (e: Event): void => {
    e.preventDefault();
    void run(async () => {
      await post(`/orgs/${orgId}/credits`, { amount_usd: amount.trim(), ...(note.trim() ? { note: note.trim() } : {}) });
      setAmount('');
      setNote('');
      onAdded();
    });
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="add-credits-title">
      <h2 id="add-credits-title">Add credits</h2>
      <div class="grid">
        <Field label="Amount (USD; negative removes)"><input inputMode="decimal" required pattern="-?[0-9]+(\.[0-9]{1,6})?" value={amount} onInput={(e) => setAmount(e.currentTarget.value)} /></Field>
        <Field label="Note"><input maxLength={500} value={note} onInput={(e) => setNote(e.currentTarget.value)} /></Field>
      </div>
      <ErrorBox error={error} />
      <div class="actions"><button type="submit">Add credits</button></div>
    </form>
  );
}
