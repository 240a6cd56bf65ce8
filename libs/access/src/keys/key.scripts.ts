import { RedisScript } from '@mgw/redis';

/** A key record saved with its team membership, refused when the team does not exist. */
export const SAVE_KEY_SCRIPT = RedisScript.fromFile(__dirname, 'save-key.lua');
