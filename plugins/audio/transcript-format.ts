/**
 * The OpenAI transcription response formats, rendered from what any speech-to-text
 * upstream gives (text, duration, language), for providers whose reply is mapped by
 * a YAML `response` transform rather than passed through.
 */

export const TRANSCRIPT_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'] as const;
export type TranscriptFormat = (typeof TRANSCRIPT_FORMATS)[number];

export interface Transcript {
  text: string;
  /** Seconds of audio, as the upstream reported or the gateway estimated. */
  seconds: number;
  language: string | undefined;
}

export interface Rendered {
  contentType: string;
  body: string;
}

/** `HH:MM:SS<sep>mmm`, as SRT (comma) and WebVTT (dot) write times. */
export function timestamp(seconds: number, sep: ',' | '.'): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor((ms % 3_600_000) / 60_000))}:${pad(Math.floor((ms % 60_000) / 1000))}${sep}${pad(ms % 1000, 3)}`;
}

/** The `usage` object OpenAI's duration-billed models send, with the gateway's cost. */
function durationUsage(seconds: number, cost: number): Record<string, unknown> {
  return { type: 'duration', seconds: Math.ceil(seconds), cost };
}

/** One transcript in the client's format; subtitles get one cue spanning the audio. */
export function renderTranscript(t: Transcript, format: TranscriptFormat, cost: number): Rendered {
  const plain = 'text/plain; charset=utf-8';
  const end = Math.max(t.seconds, 0.001);
  switch (format) {
    case 'text':
      return { contentType: plain, body: `${t.text}\n` };
    case 'srt':
      return { contentType: plain, body: `1\n00:00:00,000 --> ${timestamp(end, ',')}\n${t.text}\n\n` };
    case 'vtt':
      return { contentType: plain, body: `WEBVTT\n\n00:00:00.000 --> ${timestamp(end, '.')}\n${t.text}\n\n` };
    case 'verbose_json':
      return {
        contentType: 'application/json',
        body: JSON.stringify({
          task: 'transcribe',
          language: t.language ?? 'unknown',
          duration: t.seconds,
          text: t.text,
          segments: [{ id: 0, seek: 0, start: 0, end: t.seconds, text: t.text, tokens: [], temperature: 0, avg_logprob: 0, compression_ratio: 0, no_speech_prob: 0 }],
          usage: durationUsage(t.seconds, cost),
        }),
      };
    case 'json':
      return { contentType: 'application/json', body: JSON.stringify({ text: t.text, usage: durationUsage(t.seconds, cost) }) };
  }
}
