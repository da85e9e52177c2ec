--[[
  The event's length in bytes in the record `data`, by its REPLAY_FIELD value `r`, or nil when the
  bytes do not frame it there: `data` must end in EVENT_FRAME, the event's bytes and '}'.
  Needs includes/fields.
]]
local FRAMED = #EVENT_FRAME + 1
local function eventLength(data, r)
  local n = r and tonumber(string.match(r, '^(%d+) '))
  if n and n + FRAMED <= #data and string.sub(data, -1) == '}' and string.sub(data, -(n + FRAMED), -(n + 2)) == EVENT_FRAME then return n end
end
