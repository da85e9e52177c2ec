--[[
  Stores the summary fields of entries just written, computed from the stored data, and their
  REPLAY_FIELD when the stored record is the one described (the same byte length, the event framed
  where the field says). Entries that have them already (a redelivered dead letter, whose add
  BullMQ ignored) keep theirs; entries that do not exist are skipped.

    Input:
      KEYS[1]   job key prefix ('<prefix>:<queue>:')

      ARGV[3i-2] job id
      ARGV[3i-1] the record's byte length as written ('' = unknown)
      ARGV[3i]   its REPLAY_FIELD value ('' = none)

    Output:
      0
]]
--- @include "includes/fields"
--- @include "includes/summary"
--- @include "includes/eventLength"

for i = 1, #ARGV, 3 do
  local key = KEYS[1] .. ARGV[i]
  if redis.call('EXISTS', key) == 1 and redis.call('HEXISTS', key, AT_FIELD) == 0 then
    local v = redis.call('HMGET', key, 'name', 'data')
    local d = decoded(v[2])
    local kind, t, at = statsOf(d, v[1] or '')
    redis.call('HSET', key, SUMMARY_FIELD, summaryOf(d), KIND_FIELD, kind, TYPE_FIELD, t, AT_FIELD, at)
    local r = ARGV[i + 2]
    if v[2] and tostring(#v[2]) == ARGV[i + 1] and eventLength(v[2], r) then redis.call('HSET', key, REPLAY_FIELD, r) end
  end
end
return 0
