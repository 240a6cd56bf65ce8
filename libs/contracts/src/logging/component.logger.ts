/**
 * What a component that runs outside a request (a listener, a timer, a connection) needs of a logger to
 * report what it cannot throw to anyone. Each takes the part it uses (`Pick<ComponentLogger, 'warn'>`), so a
 * test passes a one-method recorder; Nest's `Logger` satisfies it whole. It lives in contracts so every lib
 * can take one without depending on observability.
 */
export interface ComponentLogger {
  warn(message: string): void;
  error(message: string): void;
}
