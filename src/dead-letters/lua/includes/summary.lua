--[[
  One definition of an entry's summary and of what stats count, for entries whose summary fields
  are being written (add-summaries) or are missing (entries older writers stored, read by
  read-entries and count-stats).
]]
-- the record as a table; {} for data that is not a JSON object
local function decoded(data)
  local ok, d = pcall(cjson.decode, data or '{}')
  if ok and type(d) == 'table' then return d end
  return {}
end

-- kind (the record's, else the job name), type ('' = none), lastFailedAt ('' = none)
local function statsOf(d, name)
  local kind = type(d['kind']) == 'string' and d['kind'] or name
  local t = type(d['type']) == 'string' and d['type'] or ''
  local at = type(d['lastFailedAt']) == 'string' and d['lastFailedAt'] or ''
  return kind, t, at
end

-- the record without its event, the stack and the violations, as JSON
local function summaryOf(d)
  d['event'] = nil
  if type(d['error']) == 'table' then d['error'] = { message = d['error']['message'], code = d['error']['code'] } end
  return cjson.encode(d)
end
