--[[
  Removes entries; absent ones are skipped. The wait list is searched from its tail, where the
  oldest entries are and a replay takes them from: BullMQ's own removal scans from the head, i.e.
  the whole list per removal, which makes a large replay quadratic. Two calls an entry: one DEL of
  the hash and its logs (which says whether it existed), and the list; every redis.call costs
  Redis time on top of its command. A replay removes only entries whose event it has just sent,
  so it needs no check of its claim here: if the claim expired and another replay took the entry
  over meanwhile, that one sends the event again (a no-op for the store) and finds the entry gone.

    Input:
      KEYS[1]   job key prefix ('<prefix>:<queue>:')
      KEYS[2]   the queue's wait list
      KEYS[3]   its delayed set
      KEYS[4]   its prioritized set

      ARGV[1..] job ids

    Output:
      how many entries existed and were removed
]]

local removed = 0
for i = 1, #ARGV do
  local id = ARGV[i]
  local key = KEYS[1] .. id
  if redis.call('DEL', key, key .. ':logs') > 0 then
    if redis.call('LREM', KEYS[2], -1, id) == 0 then
      redis.call('ZREM', KEYS[3], id)
      redis.call('ZREM', KEYS[4], id)
    end
    removed = removed + 1
  end
end
return removed
