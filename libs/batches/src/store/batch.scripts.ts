import { RedisScript } from '@mgw/redis';

/** The batch store's scripts, read once at module load. */
export const BATCH_SCRIPTS = {
  reserveBatch: RedisScript.fromFile(__dirname, 'reserve-batch.lua'),
  reserveLines: RedisScript.fromFile(__dirname, 'reserve-lines.lua'),
  moveBatch: RedisScript.fromFile(__dirname, 'move-batch.lua'),
  recordResults: RedisScript.fromFile(__dirname, 'record-results.lua'),
  renewLease: RedisScript.fromFile(__dirname, 'renew-lease.lua'),
  releaseLease: RedisScript.fromFile(__dirname, 'release-lease.lua'),
} as const;
