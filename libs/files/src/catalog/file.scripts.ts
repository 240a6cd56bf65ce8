import { RedisScript } from '@mgw/redis';

/*
 * The files' Redis scripts. A key's names share its hash tag (`file-names.ts`); the expiry index is one
 * sorted set of every key's files, touched by its own scripts only, so no script spans two slots.
 */
const script = (file: string) => RedisScript.fromFile(__dirname, file);

export const FILE_SCRIPTS = {
  save: script('save-file.lua'),
  delete: script('delete-file.lua'),
  reserveExpiry: script('reserve-expiry.lua'),
  settleExpiry: script('settle-expiry.lua'),
  claimExpired: script('claim-expired.lua'),
  releaseExpired: script('release-expired.lua'),
} as const;
