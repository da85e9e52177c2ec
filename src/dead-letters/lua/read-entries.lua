--[[
  Reads entries: name, timestamp and data. In 'summary' mode the data is the stored summary (or,
  for an entry without one, the record decoded and encoded again without the event, the stack
  and the violations), so a listing never carries payloads over the wire it does not show.

    Input:
      KEYS[1]   job key prefix ('<prefix>:<queue>:')

      ARGV[1]   'summary' or 'full'
      ARGV[2..] job ids

    Output:
      id, name, timestamp ('0' if none), data ('{}' if none) for each entry that exists, in order
]]
--- @include "includes/fields"
--- @include "includes/summary"

local out = {}
local summary = ARGV[1] == 'summary'
for i = 2, #ARGV do
  local key = KEYS[1] .. ARGV[i]
  local v = redis.call('HMGET', key, 'name', 'timestamp', summary and SUMMARY_FIELD or 'data')
  if v[1] then
    local data = v[3]
    if summary and not data then data = summaryOf(decoded(redis.call('HGET', key, 'data'))) end
    out[#out + 1] = ARGV[i]
    out[#out + 1] = v[1]
    out[#out + 1] = v[2] or '0'
    out[#out + 1] = data or '{}'
  end
end
return out
