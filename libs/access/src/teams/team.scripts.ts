import { RedisScript } from '@mgw/redis';

/** A team deleted only when it has no live keys. */
export const DELETE_TEAM_SCRIPT = RedisScript.fromFile(__dirname, 'delete-team.lua');
