import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { get, type ListOf, type Track } from '../api';
import type { PageProps } from '../app';
import { usd, when } from '../format';
import { Page, Show, useLoad } from '../ui';

/** The music history: a player streaming through the content route (Range), download, and the expired state. */
export function MusicPage({ org }: PageProps): JSX.Element {
  const tracks = useLoad((signal) => get<ListOf<Track>>(`/orgs/${org.id}/music`, { limit: 50 }, signal), [org.id]);
  return (
    <Page title="Music">
      <Show value={tracks}>
        {(t) => (
          t.data.length === 0 ? <p class="muted">No music generated yet (POST /v1/music).</p> : (
            <ul class="tracks">
              {t.data.map((x) => <TrackItem key={x.id} track={x} />)}
            </ul>
          )
        )}
      </Show>
    </Page>
  );
}

function TrackItem({ track }: { track: Track }): JSX.Element {
  const [gone, setGone] = useState<string | undefined>(undefined);
  const url = track.audio?.url;
  /** The player failed: ask the route why (410 once the retention sweep removed it). */
  const failed = async (): Promise<void> => {
    if (!url) return;
    const res = await fetch(url, { headers: { range: 'bytes=0-0' }, credentials: 'same-origin' }).catch(() => undefined);
    setGone(res?.status === 410 ? 'Expired: this track was deleted from storage (410 Gone).' : `This track cannot be played (HTTP ${res?.status ?? 'error'}).`);
  };
  const title = track.prompt || '(no prompt)';
  return (
    <li class="track">
      <div class="track-head">
        <strong class="track-title">{title}</strong>
        <span class="muted small">{when(new Date(track.created * 1000).toISOString())} · {track.model || track.metadata.used_model || 'unknown model'} · {usd(track.usage.cost_usd)}</span>
      </div>
      {track.error ? <p class="badge bad">Failed: no audio</p>
        : track.expired ? <p class="badge bad" data-state="expired">Expired: deleted after the retention period</p>
          : gone ? <p class="badge bad" data-state="expired" role="status">{gone}</p>
            : url ? (
              <div class="player">
                {/* biome-ignore lint/a11y/useMediaCaption: a generated track comes with no caption file (the API returns audio only) */}
                <audio controls preload="metadata" src={url} aria-label={`Play: ${title}`} onError={() => void failed()} />
                <a href={url} download={`${track.id}.${track.metadata.response_format || 'mp3'}`}>Download</a>
              </div>
            ) : <p class="muted small">Not hosted (storage: {track.audio?.storage ?? 'none'}): it was returned inline when generated.</p>}
    </li>
  );
}
