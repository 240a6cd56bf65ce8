import { RedisScript } from '../redis-script';

/**
 * Extends the expiry of slots still held in a sorted set of expiring slots (refresh-slots.lua): what a
 * SlotKeeper's refresher runs for a key's concurrency leases and for an upstream's slots alike.
 */
export const REFRESH_SLOTS_SCRIPT = RedisScript.fromFile(__dirname, 'refresh-slots.lua');
