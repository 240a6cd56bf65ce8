import type { ClassConstructor } from 'class-transformer';
import { validateDto } from '../dto/validate-dto';
import { isFieldRecord } from '../validation/record.reader';
import { protocolVersionOf, type ProtocolFamily } from './protocol-version';

/**
 * A message another process of the deployment wrote, read by its class-validator DTO (a job, a heartbeat):
 * its version first (`protocolVersionOf`: a newer one is refused, naming it), then every field as strictly
 * as at the HTTP edge, except that fields this process does not know are dropped — during a rolling
 * upgrade a newer writer may add optional ones. Size bounds are the ceilings: the writer applied its own.
 */
export function readVersionedDto<T extends object>(
  cls: ClassConstructor<T>,
  plain: unknown,
  family: ProtocolFamily,
): T {
  if (isFieldRecord(plain)) protocolVersionOf(family, plain.v);
  return validateDto(cls, plain, undefined, 'drop');
}
