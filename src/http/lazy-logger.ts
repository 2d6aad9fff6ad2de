import type { FastifyBaseLogger } from 'fastify';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
type ChildArgs = Parameters<FastifyBaseLogger['child']>;
/** pino's loggers say whether a level is written; a logger without the method is always asked. */
type Parent = FastifyBaseLogger & { isLevelEnabled?(level: string): boolean };

/**
 * A request's logger (`request.log`, `reply.log`) that builds its pino child, the one
 * binding the request id to each line, only when a line is written: fastify asks for a
 * child per request, and at the gateway's usual level (warn) most requests write none
 * (fastify's own `incoming request` and `request completed` lines are info). The lines
 * written are the child's, so they are the same as an eager child's.
 */
class LazyChild implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(private readonly parent: Parent, private readonly bindings: ChildArgs[0]) {}

  private real(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings);
    return this.made;
  }

  private write(level: Level, args: unknown[]): void {
    if (this.made === undefined && this.parent.isLevelEnabled?.(level) === false) return;
    const logger = this.real();
    Reflect.apply(logger[level], logger, args);
  }

  get level(): string {
    return this.made?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real().level = level;
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }

  error(...args: unknown[]): void {
    this.write('error', args);
  }

  warn(...args: unknown[]): void {
    this.write('warn', args);
  }

  info(...args: unknown[]): void {
    this.write('info', args);
  }

  debug(...args: unknown[]): void {
    this.write('debug', args);
  }

  trace(...args: unknown[]): void {
    this.write('trace', args);
  }

  silent(): void {}

  child(...args: ChildArgs): FastifyBaseLogger {
    return this.real().child(...args);
  }
}

/**
 * fastify's `childLoggerFactory`: a lazy child, unless the route sets options of its own
 * (a level, serializers), which only an eager child applies as given.
 */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: ChildArgs[0], options: NonNullable<ChildArgs[1]>): FastifyBaseLogger {
  for (const _ in options) return logger.child(bindings, options);
  return new LazyChild(logger, bindings);
}
