--[[
  The fields plan-ledger keeps in a dead letter's job hash, beside BullMQ's own ('name',
  'timestamp', 'data'), and the frame of the event in a record. dead-letter-codec.ts names the
  same values; a test holds the two equal. They are a storage format: entries already written
  carry them, so they do not change.
]]
-- the record without its event, the stack and the violations (JSON): what listings read
local SUMMARY_FIELD = 'pl:summary'
-- what stats count by: the kind, the type ('' = none), lastFailedAt ('' = none)
local KIND_FIELD = 'pl:kind'
local TYPE_FIELD = 'pl:type'
local AT_FIELD = 'pl:at'
-- '<event bytes> <replay count> <event id>': where the event starts in a record laid out with it last
local REPLAY_FIELD = 'pl:replay'
-- a replay's claim on the entry: '<expiry ms>:<token>'
local CLAIM_FIELD = 'pl:claim'
-- what precedes the event in such a record, which ends in ',"event":<event JSON>}'
local EVENT_FRAME = ',"event":'
