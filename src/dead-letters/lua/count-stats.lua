--[[
  Counts entries by kind and by type and finds the one dead-lettered longest ago. Only numbers
  and names cross the wire (a few hundred bytes a page), and each entry's stored kind, type and
  time are read (no JSON decoded; an entry without them is decoded, as an older writer left it).

    Input:
      KEYS[1]   job key prefix ('<prefix>:<queue>:')

      ARGV[1..] job ids

    Output:
      n, oldestId ('' if none), oldestAt, kind1, count1, ..., '|', type1, count1, ...
      oldestAt is lastFailedAt (ISO-8601, so it orders as text), else '#<job timestamp ms>'.
      Type '' = none.
]]
--- @include "includes/fields"
--- @include "includes/summary"

local kinds, types = {}, {}
local n, oldestId, oldestAt = 0, '', ''
for i = 1, #ARGV do
  local key = KEYS[1] .. ARGV[i]
  local v = redis.call('HMGET', key, 'name', 'timestamp', KIND_FIELD, TYPE_FIELD, AT_FIELD)
  if v[1] then
    n = n + 1
    local kind, t, at = v[3], v[4], v[5]
    if not at then kind, t, at = statsOf(decoded(redis.call('HGET', key, 'data')), v[1]) end
    kinds[kind] = (kinds[kind] or 0) + 1
    types[t] = (types[t] or 0) + 1
    if at == '' then at = '#' .. (v[2] or '0') end
    if oldestId == '' or at < oldestAt then oldestId, oldestAt = ARGV[i], at end
  end
end
local out = { n, oldestId, oldestAt }
for k, c in pairs(kinds) do out[#out + 1] = k; out[#out + 1] = c end
out[#out + 1] = '|'
for k, c in pairs(types) do out[#out + 1] = k; out[#out + 1] = c end
return out
