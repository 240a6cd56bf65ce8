-- A frame of resumable streams: each stream's messages appended to its replay log, then the frame published.
-- KEYS: the replay logs of the frame's streams. ARGV: 1 channel, 2 frame, then per log: its messages (a frame
-- of its own), its MAXLEN, its retention (ms). Returns what PUBLISH returns: the subscribers that heard it.
for i, key in ipairs(KEYS) do
  local at = 3 * i
  redis.call('XADD', key, 'MAXLEN', '~', ARGV[at + 1], '*', 'f', ARGV[at])
  redis.call('PEXPIRE', key, ARGV[at + 2])
end
return redis.call('PUBLISH', ARGV[1], ARGV[2])
