import { RedisScript } from '@mgw/redis';

/*
 * Upstream slots are expiring slots, as an API key's concurrency leases are (@mgw/redis's slots/): a sorted
 * set per upstream of slot ids scored by expiry, extended by the SlotKeeper while held, removed on release. A worker that dies
 * stops extending its slots and they lapse within their time to live. Each script's KEYS, ARGV and reply are
 * written at the top of its `.lua` file.
 */

/** Takes a slot of the least loaded candidate, atomically, or none. */
export const ACQUIRE_SLOT_SCRIPT = RedisScript.fromFile(__dirname, 'acquire-slot.lua');

/** Gives a slot back and, if it was still held, tells every worker of the model that one is free. */
export const RELEASE_SLOT_SCRIPT = RedisScript.fromFile(__dirname, 'release-slot.lua');

/**
 * Places a request by its prompt's prefix key: the upstream that served the key last, or for a new key the
 * first in its rendezvous order under its bounded share of the keys.
 */
export const PREFIX_PLACEMENT_SCRIPT = RedisScript.fromFile(__dirname, 'prefix-placement.lua');
