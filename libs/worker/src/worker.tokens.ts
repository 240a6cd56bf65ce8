/** Injection tokens of a worker process, for what is not a class of its own. */

/** The model kind the process serves (`ModelKind`). */
export const WORKER_KIND = Symbol('WORKER_KIND');
/** The model catalog (`Catalog`). */
export const WORKER_CATALOG = Symbol('WORKER_CATALOG');
/** The app's logger (`LoggerService`); log lines keep their shape, with no Nest context added. */
export const WORKER_LOGGER = Symbol('WORKER_LOGGER');
/** The catalog models this process serves (`CatalogModel[]`). */
export const SERVED_MODELS = Symbol('SERVED_MODELS');
/** Command connection that publishes replies and records usage (`Redis`, owned by WorkerConnections). */
export const PUBLISHER_CONNECTION = Symbol('PUBLISHER_CONNECTION');
/** Pub/sub connection of the control channel and the upstream pools' channels (`Redis`, owned by WorkerConnections). */
export const SUBSCRIBER_CONNECTION = Symbol('SUBSCRIBER_CONNECTION');
/** Blocking connection the queue consumers take jobs on (`Redis`, owned by WorkerConnections). */
export const QUEUE_CONNECTION = Symbol('QUEUE_CONNECTION');
/** What backends are built with (`BackendSettings`). */
export const BACKEND_SETTINGS = Symbol('BACKEND_SETTINGS');
/** The metrics/health HTTP server (`MetricsServer`), or null when METRICS_PORT is 0. */
export const METRICS_SERVER = Symbol('METRICS_SERVER');
