--[[
  Gives up a replay's claims on entries it read but did not send (they stay as they are, and the
  next replay may take them at once). A claim held by another token is left alone.

    Input:
      KEYS[1]   job key prefix ('<prefix>:<queue>:')

      ARGV[1]   the replay's token
      ARGV[2..] job ids

    Output:
      how many claims were released
]]
--- @include "includes/fields"

local mine = ':' .. ARGV[1]
local released = 0
for i = 2, #ARGV do
  local key = KEYS[1] .. ARGV[i]
  local held = redis.call('HGET', key, CLAIM_FIELD)
  if held and string.sub(held, -#mine) == mine then
    redis.call('HDEL', key, CLAIM_FIELD)
    released = released + 1
  end
end
return released
