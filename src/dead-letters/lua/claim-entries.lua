--[[
  Claims entries for a replay and reads what it sends of them. An entry is claimed when it exists
  and is unclaimed or its claim has expired; Redis's clock decides expiry, so replays on hosts with
  skewed clocks agree. For an entry laid out with its event last (REPLAY_FIELD), the event's
  bytes are cut out of the record here; for any other, the whole record is returned.

    Input:
      KEYS[1]   job key prefix ('<prefix>:<queue>:')

      ARGV[1]   the replay's token
      ARGV[2]   how long the claim lasts, ms
      ARGV[3..] job ids

    Output:
      for each entry claimed, in order: id, REPLAY_FIELD value, the event's bytes;
      or id, '', the whole record, for an entry without that layout
]]
--- @include "includes/fields"
--- @include "includes/eventLength"

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local claim = tostring(now + tonumber(ARGV[2])) .. ':' .. ARGV[1]
local out = {}
for i = 3, #ARGV do
  local id = ARGV[i]
  local key = KEYS[1] .. id
  local v = redis.call('HMGET', key, 'name', 'data', CLAIM_FIELD, REPLAY_FIELD)
  if v[1] then
    local held = v[3]
    if held then
      local expiry = tonumber(string.match(held, '^(%d+):'))
      if expiry and expiry <= now then held = nil end
    end
    if not held then
      redis.call('HSET', key, CLAIM_FIELD, claim)
      local data = v[2] or '{}'
      local n = eventLength(data, v[4])
      out[#out + 1] = id
      if n then
        out[#out + 1] = v[4]
        out[#out + 1] = string.sub(data, -(n + 1), -2)
      else
        out[#out + 1] = ''
        out[#out + 1] = data
      end
    end
  end
end
return out
