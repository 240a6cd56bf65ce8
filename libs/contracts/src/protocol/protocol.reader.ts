import { FailFast, RecordReader } from '../validation/record.reader';
import { ProtocolError } from './protocol.error';

/**
 * The fail-fast reader of reply and cancel messages: the first problem throws a `ProtocolError` naming the
 * field in quotes (`'seq' must be a non-negative integer`). One instance for the process, so reading a
 * message on the per-token path allocates nothing for the checks.
 */
export const protocolReader = new RecordReader(
  new FailFast((message) => new ProtocolError(message)),
  (field) => `'${field}'`,
);
