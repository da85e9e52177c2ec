--[[
  Depth for /metrics: counts entries by job name (the writer names each job after its kind) and
  finds the smallest job timestamp (when it was dead-lettered). Reads two short hash fields an
  entry and decodes no JSON.

    Input:
      KEYS[1]   job key prefix ('<prefix>:<queue>:')
      KEYS[2]   the queue's wait list

      ARGV[1]   'range': the entries are KEYS[2] from index ARGV[2] to ARGV[3], read here (no id
                crosses the wire); 'ids': the entries are ARGV[2..]

    Output:
      n, oldest timestamp ms as text ('-1' if none), how many ids were looked at, name1, count1, ...
]]

local ids
if ARGV[1] == 'range' then
  ids = redis.call('LRANGE', KEYS[2], ARGV[2], ARGV[3])
else
  ids = {}
  for i = 2, #ARGV do ids[#ids + 1] = ARGV[i] end
end
local kinds = {}
local n, oldest = 0, -1
for i = 1, #ids do
  local v = redis.call('HMGET', KEYS[1] .. ids[i], 'name', 'timestamp')
  if v[1] then
    n = n + 1
    kinds[v[1]] = (kinds[v[1]] or 0) + 1
    local ts = tonumber(v[2] or '0') or 0
    if oldest < 0 or ts < oldest then oldest = ts end
  end
end
local out = { n, tostring(oldest), #ids }
for k, c in pairs(kinds) do out[#out + 1] = k; out[#out + 1] = c end
return out
