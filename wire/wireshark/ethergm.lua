-- ethergm.lua: Wireshark dissector for EtherGM, GM-style messaging carried
-- directly in Ethernet frames (default EtherType 0x88B5).
--
-- The frame format is specified in docs/PROTOCOL.md; package wire is the
-- reference implementation. This file decodes every frame type and every
-- header field of that document, the remote address extension of PUT, GET
-- and GOT, and the mapper bodies of SCOUT, SCOUT_REPLY, CONFIG and
-- CONFIG_ACK. It verifies the CRC32C and raises expert infos for a bad CRC,
-- an unknown version or type, a payload length that disagrees with the
-- frame, truncated captures and malformed mapper bodies.
--
-- Load it ad hoc:
--   tshark -X lua_script:wire/wireshark/ethergm.lua -r capture.pcapng
--   wireshark -X lua_script:wire/wireshark/ethergm.lua -r capture.pcapng
-- or install it for good with `make wireshark-install`, which copies it into
-- ~/.local/lib/wireshark/plugins/.
--
-- Written for Wireshark 4.0 and later (Lua 5.2, bit32).

local ETHERGM_DEFAULT_ETHERTYPE = 0x88B5
local HEADER_LEN = 44
local REMOTE_ADDR_LEN = 8
local ETH_MIN_PAYLOAD = 46 -- Ethernet frames are padded to 60 bytes (46 after the Ethernet header)
local VERSION = 1
local NUM_PORTS = 16 -- GM ports per interface (wire.NumPorts)
local PORT_NONE = 0xFF -- the target port of the link's self-test frames (wire.PortNone)

-- Loading the dissector twice (installed as a plugin and given with
-- -X lua_script as well) would fail on the second Proto; keep the first.
local created, p_ethergm = pcall(Proto, "ethergm", "EtherGM")
if not created then
    return
end

--------------------------------------------------------------------------
-- Value strings
--------------------------------------------------------------------------

-- Frame types (wire.Type).
local TYPE_DATA = 1
local TYPE_DATA_FIRST = 2
local TYPE_DATA_MIDDLE = 3
local TYPE_DATA_LAST = 4
local TYPE_ACK = 5
local TYPE_NACK = 6
local TYPE_PUT = 7
local TYPE_GET = 8
local TYPE_GOT = 9
local TYPE_DATAGRAM = 10
local TYPE_OPEN = 11
local TYPE_OPEN_ACK = 12
local TYPE_SCOUT = 0x20
local TYPE_SCOUT_REPLY = 0x21
local TYPE_CONFIG = 0x22
local TYPE_CONFIG_ACK = 0x23

local type_names = {
    [TYPE_DATA] = "DATA",
    [TYPE_DATA_FIRST] = "DATA_FIRST",
    [TYPE_DATA_MIDDLE] = "DATA_MIDDLE",
    [TYPE_DATA_LAST] = "DATA_LAST",
    [TYPE_ACK] = "ACK",
    [TYPE_NACK] = "NACK",
    [TYPE_PUT] = "PUT",
    [TYPE_GET] = "GET",
    [TYPE_GOT] = "GOT",
    [TYPE_DATAGRAM] = "DATAGRAM",
    [TYPE_OPEN] = "OPEN",
    [TYPE_OPEN_ACK] = "OPEN_ACK",
    [TYPE_SCOUT] = "SCOUT",
    [TYPE_SCOUT_REPLY] = "SCOUT_REPLY",
    [TYPE_CONFIG] = "CONFIG",
    [TYPE_CONFIG_ACK] = "CONFIG_ACK",
}

-- NACK reasons (wire.NackReason), carried in the status byte of NACK frames.
local nack_names = {
    [1] = "NO_BUFFER",
    [2] = "REJECTED",
    [3] = "PORT_CLOSED",
    [4] = "STALE_SESSION",
}

-- Flag bits (wire.Flags).
local FLAG_HIGH = 0x0001
local FLAG_ACK_REQUEST = 0x0002
local FLAG_ACK_VALID = 0x0004
local FLAG_RETRANSMIT = 0x0008
local FLAG_REPLY = 0x0010 -- a frame of a reply stream (PROTOCOL.md section 7.6)
local FLAG_SEP_REPLY = 0x0020 -- GET: reply on the reply stream (PROTOCOL.md section 7.5)
local FLAG_AUTH = 0x0080 -- the cluster-key trailer follows the payload (PROTOCOL.md section 19)
local FLAGS_DEFINED = 0x00BF
local TRAILER_LEN = 20
-- The tag is SipHash-2-4-128 below this covered length (frame + 4 trailer
-- bytes), GHASH-AES from it (PROTOCOL.md section 19.1).
local GHASH_MIN = 256

local flag_names = {
    { FLAG_HIGH, "HIGH" },
    { FLAG_ACK_REQUEST, "ACKREQ" },
    { FLAG_ACK_VALID, "ACKVALID" },
    { FLAG_RETRANSMIT, "RETRANSMIT" },
    { FLAG_REPLY, "REPLY" },
    { FLAG_SEP_REPLY, "SEPREPLY" },
    { FLAG_AUTH, "AUTH" },
}

-- Checksum status, with the values of Wireshark's own proto_checksum_enum_e
-- (PROTO_CHECKSUM_E_BAD = 0, _GOOD = 1, _UNVERIFIED = 2).
local CRC_BAD = 0
local CRC_GOOD = 1
local CRC_UNVERIFIED = 2
local crc_status_names = {
    [CRC_BAD] = "Bad",
    [CRC_GOOD] = "Good",
    [CRC_UNVERIFIED] = "Unverified",
}

local function type_name(t)
    return type_names[t] or string.format("Type(0x%02x)", t)
end

local function nack_name(r)
    return nack_names[r] or string.format("NackReason(%d)", r)
end

local function flags_string(f)
    if f == 0 then
        return "0"
    end
    local parts = {}
    for _, fn in ipairs(flag_names) do
        if bit32.band(f, fn[1]) ~= 0 then
            parts[#parts + 1] = fn[2]
        end
    end
    local rest = bit32.band(f, bit32.bnot(FLAGS_DEFINED))
    if rest ~= 0 then
        parts[#parts + 1] = string.format("0x%x", rest)
    end
    return table.concat(parts, "|")
end

--------------------------------------------------------------------------
-- Fields
--------------------------------------------------------------------------

local f = {
    version = ProtoField.uint8("ethergm.version", "Version", base.DEC),
    type = ProtoField.uint8("ethergm.type", "Type", base.HEX_DEC, type_names),
    tport = ProtoField.uint8("ethergm.tport", "Target port", base.DEC),
    sport = ProtoField.uint8("ethergm.sport", "Source port", base.DEC),
    flags = ProtoField.uint16("ethergm.flags", "Flags", base.HEX),
    flag_high = ProtoField.bool("ethergm.flags.high", "High priority", 16, nil, FLAG_HIGH),
    flag_ackreq = ProtoField.bool("ethergm.flags.ackreq", "Ack request", 16, nil, FLAG_ACK_REQUEST),
    flag_ackvalid = ProtoField.bool("ethergm.flags.ackvalid", "Ack valid", 16, nil, FLAG_ACK_VALID),
    flag_retransmit = ProtoField.bool("ethergm.flags.retransmit", "Retransmit", 16, nil, FLAG_RETRANSMIT),
    flag_reply = ProtoField.bool("ethergm.flags.reply", "Reply stream", 16, nil, FLAG_REPLY),
    flag_sepreply = ProtoField.bool("ethergm.flags.sepreply", "Reply on the reply stream", 16, nil, FLAG_SEP_REPLY),
    flag_auth = ProtoField.bool("ethergm.flags.auth", "Cluster-key trailer", 16, nil, FLAG_AUTH),
    flag_unknown = ProtoField.uint16("ethergm.flags.reserved", "Reserved flag bits", base.HEX,
        nil, bit32.band(0xFFFF, bit32.bnot(FLAGS_DEFINED))),
    size = ProtoField.uint8("ethergm.size", "Size class", base.DEC),
    status = ProtoField.uint8("ethergm.status", "Status", base.DEC),
    -- The same filter field with the NACK reason names, used in NACK frames.
    status_nack = ProtoField.uint8("ethergm.status", "NACK reason", base.DEC, nack_names),
    tnode = ProtoField.uint32("ethergm.tnode", "Target node", base.DEC),
    snode = ProtoField.uint32("ethergm.snode", "Source node", base.DEC),
    session = ProtoField.uint32("ethergm.session", "Session", base.HEX_DEC),
    seq = ProtoField.uint32("ethergm.seq", "Sequence number", base.DEC),
    ack = ProtoField.uint32("ethergm.ack", "Cumulative ack", base.DEC),
    msglen = ProtoField.uint32("ethergm.msglen", "Message length", base.DEC),
    -- The msglen field of OPEN_ACK frames: the receive window (section 7.9).
    window = ProtoField.uint32("ethergm.window", "Receive window (frames)", base.DEC),
    offset = ProtoField.uint32("ethergm.offset", "Segment offset", base.DEC),
    paylen = ProtoField.uint16("ethergm.paylen", "Payload length", base.DEC),
    reserved = ProtoField.uint16("ethergm.reserved", "Reserved", base.HEX),
    crc = ProtoField.uint32("ethergm.crc", "CRC32C", base.HEX),
    crc_status = ProtoField.uint8("ethergm.crc.status", "CRC status", base.DEC, crc_status_names),
    crc_calc = ProtoField.uint32("ethergm.crc.calculated", "Calculated CRC32C", base.HEX),
    raddr = ProtoField.uint64("ethergm.raddr", "Remote address", base.HEX),
    -- Session and seq of a DATAGRAM to a port: its sender's 64-bit counter
    -- (section 7.7).
    dgcounter = ProtoField.uint64("ethergm.dgcounter", "Datagram counter", base.DEC),
    payload = ProtoField.bytes("ethergm.payload", "Payload"),
    sack = ProtoField.bytes("ethergm.ack.sack", "Selective ack bitmap"),
    get_laddr = ProtoField.uint64("ethergm.get.laddr", "Requester's local address", base.HEX),
    padding = ProtoField.bytes("ethergm.padding", "Padding"),
    trailer = ProtoField.none("ethergm.trailer", "Cluster-key trailer"),
    trailer_partition = ProtoField.uint16("ethergm.trailer.partition", "Partition", base.DEC),
    trailer_keyid = ProtoField.uint8("ethergm.trailer.keyid", "Key id", base.HEX),
    trailer_reserved = ProtoField.uint8("ethergm.trailer.reserved", "Reserved", base.HEX),
    trailer_tag = ProtoField.bytes("ethergm.trailer.tag", "Tag"),
    trailer_mac = ProtoField.string("ethergm.trailer.mac", "MAC (by covered length)"),
    seg_index = ProtoField.uint32("ethergm.seg.index", "Segment", base.DEC),
    seg_count = ProtoField.uint32("ethergm.seg.count", "Segments", base.DEC),
}

-- Mapper bodies (revision 1, docs/PROTOCOL.md section 13).
local HOST_HELLO, HOST_LEADER, HOST_CONFIGURED = 0x01, 0x02, 0x04
local RAIL_UP, RAIL_HEARING = 0x01, 0x02
local CONFIG_TABLE = 0x01
local ENTRY_ABSENT = 0x01
local fm = {
    host = ProtoField.none("ethergm.scout", "Host info"),
    host_rev = ProtoField.uint8("ethergm.scout.rev", "Body revision", base.DEC),
    host_flags = ProtoField.uint8("ethergm.scout.flags", "Flags", base.HEX),
    host_hello = ProtoField.bool("ethergm.scout.flags.hello", "Hello (starting, answer me)", 8, nil, HOST_HELLO),
    host_leader = ProtoField.bool("ethergm.scout.flags.leader", "Mapper in charge", 8, nil, HOST_LEADER),
    host_configured = ProtoField.bool("ethergm.scout.flags.configured", "Network fully configured", 8, nil, HOST_CONFIGURED),
    host_level = ProtoField.uint8("ethergm.scout.level", "Mapper level", base.DEC),
    host_name_len = ProtoField.uint8("ethergm.scout.namelen", "Name length", base.DEC),
    host_map_version = ProtoField.uint32("ethergm.scout.mapversion", "Map version", base.DEC),
    host_node = ProtoField.uint32("ethergm.scout.node", "Node id", base.DEC),
    host_mapper_id = ProtoField.ether("ethergm.scout.mapper", "Mapper unique id"),
    host_rails = ProtoField.uint8("ethergm.scout.rails", "Rails", base.DEC),
    host_unique_id = ProtoField.ether("ethergm.scout.uid", "Unique id"),
    rail = ProtoField.none("ethergm.scout.rail", "Rail"),
    rail_mac = ProtoField.ether("ethergm.scout.rail.mac", "MAC address"),
    rail_state = ProtoField.uint8("ethergm.scout.rail.state", "State", base.HEX),
    rail_up = ProtoField.bool("ethergm.scout.rail.up", "Link up", 8, nil, RAIL_UP),
    rail_hearing = ProtoField.bool("ethergm.scout.rail.hearing", "Hearing peers", 8, nil, RAIL_HEARING),
    host_name = ProtoField.string("ethergm.scout.name", "Host name"),
    config = ProtoField.none("ethergm.config", "Config"),
    config_rev = ProtoField.uint8("ethergm.config.rev", "Body revision", base.DEC),
    config_flags = ProtoField.uint8("ethergm.config.flags", "Flags", base.HEX),
    config_table = ProtoField.bool("ethergm.config.flags.table", "Table hand-over", 8, nil, CONFIG_TABLE),
    config_total = ProtoField.uint16("ethergm.config.total", "Total hosts", base.DEC),
    config_map_version = ProtoField.uint32("ethergm.config.mapversion", "Map version", base.DEC),
    config_mapper_id = ProtoField.ether("ethergm.config.mapper", "Mapper unique id"),
    config_first = ProtoField.uint16("ethergm.config.first", "First entry index", base.DEC),
    config_count = ProtoField.uint16("ethergm.config.count", "Entry count", base.DEC),
    entry = ProtoField.none("ethergm.config.entry", "Entry"),
    entry_index = ProtoField.uint16("ethergm.config.entry.index", "Index in host table", base.DEC),
    entry_node = ProtoField.uint32("ethergm.config.entry.node", "Node id", base.DEC),
    entry_flags = ProtoField.uint8("ethergm.config.entry.flags", "Flags", base.HEX),
    entry_absent = ProtoField.bool("ethergm.config.entry.absent", "Absent (id reserved)", 8, nil, ENTRY_ABSENT),
    entry_rails = ProtoField.uint8("ethergm.config.entry.rails", "Rails", base.DEC),
    entry_up = ProtoField.uint8("ethergm.config.entry.upmask", "Rails up", base.HEX),
    entry_name_len = ProtoField.uint8("ethergm.config.entry.namelen", "Name length", base.DEC),
    entry_unique_id = ProtoField.ether("ethergm.config.entry.uid", "Unique id"),
    entry_mac = ProtoField.ether("ethergm.config.entry.mac", "MAC address"),
    entry_seen = ProtoField.uint8("ethergm.config.entry.seen", "Heard on the mapper's rails", base.HEX),
    entry_name = ProtoField.string("ethergm.config.entry.name", "Host name"),
    cack = ProtoField.none("ethergm.configack", "Config ack"),
    cack_rev = ProtoField.uint8("ethergm.configack.rev", "Body revision", base.DEC),
    cack_flags = ProtoField.uint8("ethergm.configack.flags", "Flags", base.HEX),
    cack_table = ProtoField.bool("ethergm.configack.flags.table", "Table hand-over", 8, nil, CONFIG_TABLE),
    cack_unique_id = ProtoField.ether("ethergm.configack.uid", "Unique id"),
    cack_map_version = ProtoField.uint32("ethergm.configack.mapversion", "Map version", base.DEC),
    cack_node = ProtoField.uint32("ethergm.configack.node", "Node id", base.DEC),
}

-- ethergm.status is registered twice, with the NACK reason names first:
-- display filters then accept ethergm.status == "NO_BUFFER".
local pf = { f.status_nack }
for k, v in pairs(f) do
    if k ~= "status_nack" then
        pf[#pf + 1] = v
    end
end
for _, v in pairs(fm) do
    pf[#pf + 1] = v
end
p_ethergm.fields = pf

--------------------------------------------------------------------------
-- Expert infos
--------------------------------------------------------------------------

local e = {
    bad_crc = ProtoExpert.new("ethergm.crc.bad", "Bad CRC32C",
        expert.group.CHECKSUM, expert.severity.ERROR),
    version = ProtoExpert.new("ethergm.version.unknown", "Unknown EtherGM version",
        expert.group.PROTOCOL, expert.severity.ERROR),
    unknown_type = ProtoExpert.new("ethergm.type.unknown", "Unknown EtherGM frame type",
        expert.group.PROTOCOL, expert.severity.ERROR),
    bad_length = ProtoExpert.new("ethergm.paylen.bad", "Payload length disagrees with the frame",
        expert.group.MALFORMED, expert.severity.ERROR),
    trailing = ProtoExpert.new("ethergm.trailing", "Bytes after the payload that are not Ethernet padding",
        expert.group.PROTOCOL, expert.severity.NOTE),
    truncated = ProtoExpert.new("ethergm.truncated", "Frame truncated by the capture",
        expert.group.UNDECODED, expert.severity.WARN),
    short = ProtoExpert.new("ethergm.short", "Frame too short for an EtherGM header",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_body = ProtoExpert.new("ethergm.body.bad", "Malformed mapper body",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_segment = ProtoExpert.new("ethergm.seg.bad", "Segment lies outside its message",
        expert.group.PROTOCOL, expert.severity.WARN),
    retransmit = ProtoExpert.new("ethergm.retransmission", "Retransmitted frame",
        expert.group.SEQUENCE, expert.severity.NOTE),
    nack = ProtoExpert.new("ethergm.nack", "Frame refused",
        expert.group.RESPONSE_CODE, expert.severity.NOTE),
    nonzero_status = ProtoExpert.new("ethergm.status.nonzero", "Status is not 0 in a frame that is not a NACK",
        expert.group.PROTOCOL, expert.severity.NOTE),
    go_back = ProtoExpert.new("ethergm.ack.goback", "Go back: the receiver dropped frames beyond the ack",
        expert.group.SEQUENCE, expert.severity.NOTE),
    bad_port = ProtoExpert.new("ethergm.port.invalid", "Port number is not a GM port (0..15) nor 0xFF",
        expert.group.PROTOCOL, expert.severity.WARN),
    bad_get = ProtoExpert.new("ethergm.get.bad", "GET payload is not an 8-byte local address",
        expert.group.PROTOCOL, expert.severity.WARN),
    self_test = ProtoExpert.new("ethergm.selftest", "Link self-test frame (target port 0xFF)",
        expert.group.COMMENTS_GROUP, expert.severity.CHAT),
}

local pe = {}
for _, v in pairs(e) do
    pe[#pe + 1] = v
end
p_ethergm.experts = pe

--------------------------------------------------------------------------
-- CRC32C (Castagnoli, reflected polynomial 0x82F63B78)
--------------------------------------------------------------------------

local crc_table = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if bit32.band(c, 1) ~= 0 then
            c = bit32.bxor(bit32.rshift(c, 1), 0x82F63B78)
        else
            c = bit32.rshift(c, 1)
        end
    end
    crc_table[i] = c
end

-- crc32c_update continues the CRC crc (0 to start) over the Lua string s,
-- like Go's crc32.Update with the Castagnoli table.
local function crc32c_update(crc, s)
    local band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift
    local t = crc_table
    local c = bit32.bnot(crc)
    for i = 1, #s do
        c = bxor(t[band(bxor(c, s:byte(i)), 0xFF)], rshift(c, 8))
    end
    return bit32.bnot(c)
end

--------------------------------------------------------------------------
-- Segment numbering
--------------------------------------------------------------------------

-- seg_size remembers, per message stream, the payload length of the first
-- or middle segments seen, so that the last segment of a message can be
-- numbered too. Keyed by "snode:sport>tnode:tport/session/msglen".
local seg_size = {}

local function seg_numbers(key, ftype, offset, paylen, msglen)
    local s
    if ftype == TYPE_DATA_FIRST or ftype == TYPE_DATA_MIDDLE then
        if paylen == 0 then
            return nil
        end
        s = paylen
        seg_size[key] = s
    elseif ftype == TYPE_DATA_LAST then
        s = seg_size[key]
        if s == nil then
            if offset == 0 and paylen == msglen then
                return 1, 1
            end
            return nil
        end
    else
        return nil
    end
    if offset % s ~= 0 then
        return nil
    end
    local n = math.floor((msglen + s - 1) / s)
    local k = math.floor(offset / s) + 1
    if ftype == TYPE_DATA_LAST then
        n = k
    end
    return k, n
end

--------------------------------------------------------------------------
-- Mapper bodies
--------------------------------------------------------------------------

-- Host names: at most MAX_HOST_NAME_LEN bytes, no NUL (wire.MaxHostNameLen).
local MAX_HOST_NAME_LEN = 128
local MAPPER_REV = 2 -- wire.MapperRev
local MAX_RAILS = 8
local HOST_INFO_LEN = 20
local HOST_RAIL_LEN = 8
local CONFIG_LEN = 20
local CONFIG_ENTRY_LEN = 8
local CONFIG_RAIL_LEN = 8 -- MAC, seen mask, reserved
local CONFIG_ACK_LEN = 16

local function mac_string(r)
    local b = r:bytes()
    local parts = {}
    for i = 0, b:len() - 1 do
        parts[#parts + 1] = string.format("%02x", b:get_index(i))
    end
    return table.concat(parts, ":")
end

-- check_name adds an expert info to item if the name in range r (nl bytes)
-- is too long or holds a NUL byte, and returns the name as a Lua string.
local function check_name(item, r, nl)
    if nl == 0 then
        return ""
    end
    local s = r:raw()
    if nl > MAX_HOST_NAME_LEN then
        item:add_proto_expert_info(e.bad_body, string.format(
            "Host name of %d bytes is longer than %d", nl, MAX_HOST_NAME_LEN))
    end
    if s:find("\0", 1, true) then
        item:add_proto_expert_info(e.bad_body, "Host name contains a NUL byte")
    end
    return s
end

-- Each mapper body decoder takes the TvbRange of the payload present in the
-- capture, the EtherGM tree and the declared payload length, decodes the
-- body as a subtree and returns a summary for the Info column.
local mapper = {}

-- check_rev adds the body revision to st and reports whether it is the
-- one this dissector knows; the rest of another revision is not decoded.
local function check_rev(st, field, r)
    local ri = st:add(field, r(0, 1))
    local rev = r(0, 1):uint()
    if rev ~= MAPPER_REV then
        ri:add_proto_expert_info(e.bad_body, string.format(
            "Mapper body revision %d; this dissector knows revision %d", rev, MAPPER_REV))
        return false
    end
    return true
end

-- HostInfo: revision u8 | flags u8 | level u8 | name length u8 |
-- map version u32 | node id u32 | mapper unique id [6] | rail count u8 |
-- reserved u8 | rails (MAC [6] | state u8 | reserved u8) | name.
local function dissect_host_info(r, tree, paylen)
    local n = r:len()
    local st = tree:add(fm.host, r)
    if n < HOST_INFO_LEN then
        st:add_proto_expert_info(e.bad_body, string.format(
            "Host info body of %d bytes is shorter than its fixed part (%d bytes)", n, HOST_INFO_LEN))
        return "[bad body]"
    end
    if not check_rev(st, fm.host_rev, r) then
        return string.format("[revision %d]", r(0, 1):uint())
    end
    local ft = st:add(fm.host_flags, r(1, 1))
    ft:add(fm.host_hello, r(1, 1))
    ft:add(fm.host_leader, r(1, 1))
    ft:add(fm.host_configured, r(1, 1))
    st:add(fm.host_level, r(2, 1))
    local nl = r(3, 1):uint()
    local nli = st:add(fm.host_name_len, r(3, 1))
    st:add(fm.host_map_version, r(4, 4))
    st:add(fm.host_node, r(8, 4))
    st:add(fm.host_mapper_id, r(12, 6))
    local nr = r(18, 1):uint()
    local nri = st:add(fm.host_rails, r(18, 1))
    local bad = false
    if nr < 1 or nr > MAX_RAILS then
        nri:add_proto_expert_info(e.bad_body, string.format("%d rails (1..%d)", nr, MAX_RAILS))
        bad = true
    end
    local uid = "?"
    local noff = HOST_INFO_LEN + nr * HOST_RAIL_LEN
    if not bad and noff <= n then
        st:add(fm.host_unique_id, r(HOST_INFO_LEN, 6))
        uid = mac_string(r(HOST_INFO_LEN, 6))
        for i = 0, nr - 1 do
            local off = HOST_INFO_LEN + i * HOST_RAIL_LEN
            local rt = st:add(fm.rail, r(off, HOST_RAIL_LEN))
            rt:add(fm.rail_mac, r(off, 6))
            local sti = rt:add(fm.rail_state, r(off + 6, 1))
            sti:add(fm.rail_up, r(off + 6, 1))
            sti:add(fm.rail_hearing, r(off + 6, 1))
            local state = r(off + 6, 1):uint()
            local words = {}
            if bit32.band(state, RAIL_UP) ~= 0 then
                words[#words + 1] = "up"
            else
                words[#words + 1] = "down"
            end
            if bit32.band(state, RAIL_HEARING) ~= 0 then
                words[#words + 1] = "hearing"
            end
            rt:append_text(string.format(" %d: %s %s", i, mac_string(r(off, 6)), table.concat(words, ",")))
        end
    elseif not bad and n == paylen then
        nri:add_proto_expert_info(e.bad_body, string.format(
            "%d rails run past the end of the %d-byte body", nr, n))
        bad = true
    end
    local name = ""
    if not bad and noff + nl <= n then
        if nl > 0 then
            local ni = st:add(fm.host_name, r(noff, nl))
            name = check_name(ni, r(noff, nl), nl)
        end
        if noff + nl ~= paylen then
            nli:add_proto_expert_info(e.bad_body, string.format(
                "Host info body is %d bytes, %d rails and name length %d make %d", paylen, nr, nl, noff + nl))
        end
    elseif not bad and n == paylen then
        nli:add_proto_expert_info(e.bad_body, string.format(
            "Name length %d runs past the end of the %d-byte body", nl, n))
    end
    st:append_text(string.format(": %s \"%s\" node %d, level %d, map %d, %d rails",
        uid, name, r(8, 4):uint(), r(2, 1):uint(), r(4, 4):uint(), nr))
    return string.format("host=%s \"%s\" node=%d level=%d map=%d",
        uid, name, r(8, 4):uint(), r(2, 1):uint(), r(4, 4):uint())
end

mapper[TYPE_SCOUT] = dissect_host_info
mapper[TYPE_SCOUT_REPLY] = dissect_host_info

-- Config: revision u8 | flags u8 | total hosts u16 | map version u32 |
-- mapper unique id [6] | first entry index u16 | entry count u16 |
-- reserved u16 | entries, each node id u32 | flags u8 | rail count u8 |
-- up mask u8 | name length u8 | MACs [rail count][6] | name.
mapper[TYPE_CONFIG] = function(r, tree, paylen)
    local n = r:len()
    local st = tree:add(fm.config, r)
    if n < CONFIG_LEN then
        st:add_proto_expert_info(e.bad_body, string.format(
            "Config body of %d bytes is shorter than its fixed part (%d bytes)", n, CONFIG_LEN))
        return "[bad body]"
    end
    if not check_rev(st, fm.config_rev, r) then
        return string.format("[revision %d]", r(0, 1):uint())
    end
    local flags = r(1, 1):uint()
    local total = r(2, 2):uint()
    local version = r(4, 4):uint()
    local first = r(14, 2):uint()
    local count = r(16, 2):uint()
    local ft = st:add(fm.config_flags, r(1, 1))
    ft:add(fm.config_table, r(1, 1))
    local ti = st:add(fm.config_total, r(2, 2))
    st:add(fm.config_map_version, r(4, 4))
    st:add(fm.config_mapper_id, r(8, 6))
    st:add(fm.config_first, r(14, 2))
    local ci = st:add(fm.config_count, r(16, 2))
    if first + count > total then
        ti:add_proto_expert_info(e.bad_body, string.format(
            "Entries %d..%d lie outside the host table of %d hosts", first, first + count - 1, total))
    end
    local what = "map"
    if bit32.band(flags, CONFIG_TABLE) ~= 0 then
        what = "hosts table handed over"
    end
    st:append_text(string.format(": %s %d from %s, entries %d..%d of %d",
        what, version, mac_string(r(8, 6)), first, first + count - 1, total))
    local off = CONFIG_LEN
    local decoded = 0
    local broken = false
    for i = 0, count - 1 do
        if n - off < CONFIG_ENTRY_LEN then
            break
        end
        local nr = r(off + 5, 1):uint()
        local up = r(off + 6, 1):uint()
        local nl = r(off + 7, 1):uint()
        local elen = CONFIG_ENTRY_LEN + CONFIG_RAIL_LEN * nr + nl
        if off + elen > n then
            elen = n - off
        end
        local et = st:add(fm.entry, r(off, elen))
        local xi = et:add(fm.entry_index, first + i)
        xi:set_generated()
        et:add(fm.entry_node, r(off, 4))
        local eft = et:add(fm.entry_flags, r(off + 4, 1))
        eft:add(fm.entry_absent, r(off + 4, 1))
        local nri = et:add(fm.entry_rails, r(off + 5, 1))
        local upi = et:add(fm.entry_up, r(off + 6, 1))
        local nli = et:add(fm.entry_name_len, r(off + 7, 1))
        if nr < 1 or nr > MAX_RAILS then
            nri:add_proto_expert_info(e.bad_body, string.format("%d rails (1..%d)", nr, MAX_RAILS))
            broken = true
            break
        end
        if bit32.rshift(up, nr) ~= 0 then
            upi:add_proto_expert_info(e.bad_body, string.format("Up mask 0x%02x names rails beyond %d", up, nr))
        end
        local name = ""
        local uid = "?"
        if CONFIG_ENTRY_LEN + CONFIG_RAIL_LEN * nr + nl <= elen then
            et:add(fm.entry_unique_id, r(off + CONFIG_ENTRY_LEN, 6))
            uid = mac_string(r(off + CONFIG_ENTRY_LEN, 6))
            for k = 0, nr - 1 do
                local roff = off + CONFIG_ENTRY_LEN + CONFIG_RAIL_LEN * k
                et:add(fm.entry_mac, r(roff, 6))
                et:add(fm.entry_seen, r(roff + 6, 1))
            end
            if nl > 0 then
                local noff = off + CONFIG_ENTRY_LEN + CONFIG_RAIL_LEN * nr
                local ni = et:add(fm.entry_name, r(noff, nl))
                name = check_name(ni, r(noff, nl), nl)
            end
        elseif n == paylen then
            nli:add_proto_expert_info(e.bad_body, "Rails and name run past the end of the body")
            broken = true
        end
        local absent = ""
        if bit32.band(r(off + 4, 1):uint(), ENTRY_ABSENT) ~= 0 then
            absent = ", absent"
        end
        et:append_text(string.format(" %d: node %d, %s \"%s\", %d rails%s", first + i, r(off, 4):uint(),
            uid, name, nr, absent))
        off = off + elen
        decoded = decoded + 1
    end
    if n == paylen and not broken then
        if decoded < count then
            ci:add_proto_expert_info(e.bad_body, string.format(
                "Entry count %d, but the body holds %d entries", count, decoded))
        elseif off < n then
            st:add_proto_expert_info(e.bad_body, string.format(
                "%d bytes after the last entry", n - off))
        end
    end
    local range = "-"
    if count > 0 then
        range = string.format("%d..%d", first, first + count - 1)
    end
    return string.format("map=%d mapper=%s entries=%s/%d", version, mac_string(r(8, 6)), range, total)
end

-- ConfigAck: revision u8 | flags u8 | unique id [6] | map version u32 |
-- node id u32.
mapper[TYPE_CONFIG_ACK] = function(r, tree, paylen)
    local n = r:len()
    local st = tree:add(fm.cack, r)
    if n >= 1 and not check_rev(st, fm.cack_rev, r) then
        return string.format("[revision %d]", r(0, 1):uint())
    end
    if paylen ~= CONFIG_ACK_LEN then
        st:add_proto_expert_info(e.bad_body, string.format(
            "Config ack body is %d bytes, must be %d", paylen, CONFIG_ACK_LEN))
    end
    if n < CONFIG_ACK_LEN then
        return "[bad body]"
    end
    local ft = st:add(fm.cack_flags, r(1, 1))
    ft:add(fm.cack_table, r(1, 1))
    st:add(fm.cack_unique_id, r(2, 6))
    st:add(fm.cack_map_version, r(8, 4))
    st:add(fm.cack_node, r(12, 4))
    st:append_text(string.format(": map %d installed by %s as node %d",
        r(8, 4):uint(), mac_string(r(2, 6)), r(12, 4):uint()))
    return string.format("map=%d host=%s node=%d", r(8, 4):uint(), mac_string(r(2, 6)), r(12, 4):uint())
end

--------------------------------------------------------------------------
-- Dissector
--------------------------------------------------------------------------

-- dissect_sack decodes the selective-ack bitmap of an ACK: bit i (byte i/8,
-- least significant bit first) set means sequence number ack + 1 + i was
-- received. It returns "sack=N,M,..." for the Info column.
local function dissect_sack(r, tree, ack)
    local it = tree:add(f.sack, r)
    local seqs = {}
    local b = r:bytes()
    for i = 0, b:len() - 1 do
        local v = b:get_index(i)
        for j = 0, 7 do
            if bit32.band(v, bit32.lshift(1, j)) ~= 0 then
                seqs[#seqs + 1] = tostring((ack + 1 + i * 8 + j) % 4294967296)
            end
        end
    end
    if #seqs == 0 then
        it:append_text(" (none)")
        return nil
    end
    local list = table.concat(seqs, ",")
    it:append_text(" (received out of order: " .. list .. ")")
    return "sack=" .. list
end

local function dissect(tvb, pinfo, root)
    local reported = tvb:reported_len()
    local captured = tvb:len()

    pinfo.cols.protocol = "EtherGM"
    local tree = root:add(p_ethergm, tvb(0, math.min(captured, reported)))

    if reported < HEADER_LEN then
        tree:add_proto_expert_info(e.short, string.format(
            "Frame too short for an EtherGM header: %d bytes, need %d", reported, HEADER_LEN))
        pinfo.cols.info = string.format("EtherGM [short frame: %d bytes]", reported)
        return captured
    end
    if captured < HEADER_LEN then
        tree:add_proto_expert_info(e.truncated, string.format(
            "Frame truncated: %d of %d bytes captured, the EtherGM header needs %d", captured, reported, HEADER_LEN))
        pinfo.cols.info = string.format("EtherGM [TRUNCATED: %d of %d bytes captured]", captured, reported)
        return captured
    end

    local version = tvb(0, 1):uint()
    local ftype = tvb(1, 1):uint()
    local tport = tvb(2, 1):uint()
    local sport = tvb(3, 1):uint()
    local flags = tvb(4, 2):uint()
    local size = tvb(6, 1):uint()
    local status = tvb(7, 1):uint()
    local tnode = tvb(8, 4):uint()
    local snode = tvb(12, 4):uint()
    local session = tvb(16, 4):uint()
    local seq = tvb(20, 4):uint()
    local ack = tvb(24, 4):uint()
    local msglen = tvb(28, 4):uint()
    local offset = tvb(32, 4):uint()
    local paylen = tvb(36, 2):uint()
    local crc = tvb(40, 4):uint()

    local has_raddr = ftype == TYPE_PUT or ftype == TYPE_GET or ftype == TYPE_GOT
    local hlen = HEADER_LEN
    if has_raddr then
        hlen = HEADER_LEN + REMOTE_ADDR_LEN
    end
    local declared = hlen + paylen
    -- A sealed frame's trailer follows the payload; padding after it.
    local sealed = bit32.band(flags, FLAG_AUTH) ~= 0
    local tail = declared
    if sealed then
        tail = declared + TRAILER_LEN
    end

    tree:append_text(string.format(", %s, %d:%d -> %d:%d", type_name(ftype), snode, sport, tnode, tport))

    local it = tree:add(f.version, tvb(0, 1))
    if version ~= VERSION then
        it:add_proto_expert_info(e.version, string.format(
            "Unknown EtherGM version %d (this dissector knows version %d)", version, VERSION))
    end
    it = tree:add(f.type, tvb(1, 1))
    if type_names[ftype] == nil then
        it:add_proto_expert_info(e.unknown_type, string.format("Unknown EtherGM frame type 0x%02x", ftype))
    end
    local pt = tree:add(f.tport, tvb(2, 1))
    if tport == PORT_NONE then
        pt:append_text(" (none: link self-test)")
        pt:add_proto_expert_info(e.self_test)
    elseif tport >= NUM_PORTS then
        pt:add_proto_expert_info(e.bad_port, string.format("Target port %d is not a GM port (0..%d)", tport, NUM_PORTS - 1))
    end
    pt = tree:add(f.sport, tvb(3, 1))
    if sport >= NUM_PORTS and sport ~= PORT_NONE then
        pt:add_proto_expert_info(e.bad_port, string.format("Source port %d is not a GM port (0..%d)", sport, NUM_PORTS - 1))
    end

    local ft = tree:add(f.flags, tvb(4, 2))
    ft:append_text(" (" .. flags_string(flags) .. ")")
    ft:add(f.flag_high, tvb(4, 2))
    ft:add(f.flag_ackreq, tvb(4, 2))
    ft:add(f.flag_ackvalid, tvb(4, 2))
    ft:add(f.flag_retransmit, tvb(4, 2))
    ft:add(f.flag_reply, tvb(4, 2))
    if ftype == TYPE_GET or bit32.band(flags, FLAG_SEP_REPLY) ~= 0 then
        ft:add(f.flag_sepreply, tvb(4, 2))
    end
    if bit32.band(flags, FLAG_AUTH) ~= 0 then
        ft:add(f.flag_auth, tvb(4, 2))
    end
    if bit32.band(flags, bit32.bnot(FLAGS_DEFINED)) ~= 0 then
        ft:add(f.flag_unknown, tvb(4, 2))
    end
    local is_data = ftype >= TYPE_DATA and ftype <= TYPE_DATA_LAST
    local is_reliable = is_data or has_raddr
    if bit32.band(flags, FLAG_RETRANSMIT) ~= 0 then
        if ftype == TYPE_ACK then
            ft:add_proto_expert_info(e.go_back, string.format(
                "Go back: the receiver dropped frames beyond ack %d; the sender retransmits from %d",
                ack, (ack + 1) % 4294967296))
        elseif is_reliable then
            ft:add_proto_expert_info(e.retransmit)
        end
    end

    tree:add(f.size, tvb(6, 1))
    if ftype == TYPE_NACK then
        local st = tree:add(f.status_nack, tvb(7, 1))
        st:add_proto_expert_info(e.nack, string.format("Frame seq %d refused: %s", seq, nack_name(status)))
    else
        local st = tree:add(f.status, tvb(7, 1))
        if status ~= 0 then
            st:add_proto_expert_info(e.nonzero_status)
        end
    end
    tree:add(f.tnode, tvb(8, 4))
    tree:add(f.snode, tvb(12, 4))
    local sti = tree:add(f.session, tvb(16, 4))
    local qi = tree:add(f.seq, tvb(20, 4))
    local ai = tree:add(f.ack, tvb(24, 4))
    -- The session handshake (PROTOCOL.md 7.9) gives seq, ack and msglen
    -- meanings of their own.
    if ftype == TYPE_OPEN then
        sti:append_text(" (proposed)")
        ai:append_text(" (the session it replaces)")
    elseif ftype == TYPE_OPEN_ACK then
        qi:append_text(" (the session's first sequence number)")
        if bit32.band(flags, FLAG_ACK_VALID) ~= 0 then
            ai:append_text(" (cumulative ack of the session replaced)")
        end
    elseif ftype == TYPE_DATAGRAM and tport < NUM_PORTS then
        -- Section 7.7: the sender's datagram counter, high 32 bits first;
        -- receivers drop a counter they have seen (replays).
        sti:append_text(" (datagram counter, high 32 bits)")
        qi:append_text(" (datagram counter, low 32 bits)")
        tree:add(f.dgcounter, tvb(16, 8))
    end
    if ftype == TYPE_OPEN_ACK then
        local wi = tree:add(f.window, tvb(28, 4))
        if msglen == 0 then
            wi:append_text(" (none advertised)")
        end
    else
        tree:add(f.msglen, tvb(28, 4))
    end
    local ot = tree:add(f.offset, tvb(32, 4))
    local lt = tree:add(f.paylen, tvb(36, 2))
    tree:add(f.reserved, tvb(38, 2))

    -- Segment numbers, where they can be computed.
    local seg_k, seg_n
    if ftype >= TYPE_DATA and ftype <= TYPE_DATA_LAST then
        if offset + paylen > msglen then
            ot:add_proto_expert_info(e.bad_segment, string.format(
                "Segment [%d, %d) lies outside its message of %d bytes", offset, offset + paylen, msglen))
        elseif ftype == TYPE_DATA then
            seg_k, seg_n = 1, 1
        else
            local key = string.format("%d:%d>%d:%d/%d/%d", snode, sport, tnode, tport, session, msglen)
            seg_k, seg_n = seg_numbers(key, ftype, offset, paylen, msglen)
        end
        if seg_k ~= nil then
            local gi = tree:add(f.seg_index, seg_k)
            gi:set_generated()
            gi = tree:add(f.seg_count, seg_n)
            gi:set_generated()
        end
    end

    -- Remote address extension.
    if has_raddr then
        if captured >= HEADER_LEN + REMOTE_ADDR_LEN then
            tree:add(f.raddr, tvb(HEADER_LEN, REMOTE_ADDR_LEN))
        end
    end

    -- Lengths: the declared header, extension and payload must fit in the
    -- frame; bytes after them are Ethernet padding only in a minimum-size
    -- frame.
    local length_ok = true
    local truncated = captured < reported
    if declared > reported then
        length_ok = false
        lt:add_proto_expert_info(e.bad_length, string.format(
            "Payload length %d disagrees with the frame: header%s and payload need %d bytes, the frame has %d",
            paylen, has_raddr and ", remote address" or "", declared, reported))
    elseif tail < reported and reported > ETH_MIN_PAYLOAD then
        tree:add_proto_expert_info(e.trailing, string.format(
            "%d bytes after the payload in a frame longer than the Ethernet minimum", reported - tail))
    end
    if truncated then
        tree:add_proto_expert_info(e.truncated, string.format(
            "Frame truncated: %d of %d bytes captured", captured, reported))
    end

    -- CRC32C over header bytes 0..39, the extension and the payload.
    local ct = tree:add(f.crc, tvb(40, 4))
    local crc_status
    if length_ok and declared <= captured then
        local calc = crc32c_update(0, tvb:raw(0, 40))
        if declared > HEADER_LEN then
            calc = crc32c_update(calc, tvb:raw(HEADER_LEN, declared - HEADER_LEN))
        end
        if calc == crc then
            crc_status = CRC_GOOD
            ct:append_text(" [correct]")
        else
            crc_status = CRC_BAD
            ct:append_text(string.format(" [incorrect, should be 0x%08x]", calc))
            local ci = ct:add(f.crc_calc, calc)
            ci:set_generated()
            ct:add_proto_expert_info(e.bad_crc, string.format(
                "Bad CRC32C: 0x%08x, calculated 0x%08x", crc, calc))
        end
    else
        crc_status = CRC_UNVERIFIED
        ct:append_text(" [unverified]")
    end
    local si = ct:add(f.crc_status, crc_status)
    si:set_generated()

    -- Payload or mapper body.
    local avail = math.min(captured, declared) - hlen
    local body_info
    local dec = mapper[ftype]
    if dec ~= nil and version == VERSION and avail >= 0 then
        body_info = dec(tvb(hlen, avail), tree, paylen)
    elseif ftype == TYPE_ACK and avail > 0 then
        body_info = dissect_sack(tvb(hlen, avail), tree, ack)
    elseif ftype == TYPE_GET and avail == 8 and paylen == 8 then
        tree:add(f.get_laddr, tvb(hlen, 8))
        body_info = "laddr=0x" .. tvb(hlen, 8):uint64():tohex()
    elseif avail > 0 then
        tree:add(f.payload, tvb(hlen, avail))
    end
    if ftype == TYPE_GET and paylen ~= 8 and version == VERSION then
        lt:add_proto_expert_info(e.bad_get, string.format(
            "GET payload is %d bytes; it must be the requester's 8-byte local address", paylen))
    end
    if sealed and length_ok and tail <= captured then
        local tt = tree:add(f.trailer, tvb(declared, TRAILER_LEN))
        tt:append_text(string.format(": partition %d, key id 0x%02x", tvb(declared, 2):uint(), tvb(declared + 2, 1):uint()))
        tt:add(f.trailer_partition, tvb(declared, 2))
        tt:add(f.trailer_keyid, tvb(declared + 2, 1))
        tt:add(f.trailer_reserved, tvb(declared + 3, 1))
        tt:add(f.trailer_tag, tvb(declared + 4, 16))
        local mac = "SipHash-2-4-128"
        if declared + 4 >= GHASH_MIN then
            mac = "GHASH-AES"
        end
        tt:add(f.trailer_mac, mac):set_generated()
    else
        tail = declared
    end
    if tail < captured and tail < reported then
        tree:add(f.padding, tvb(tail, captured - tail))
    end
    tree:set_len(math.min(tail, captured))

    -- Info column (gm_frames --listen prints the same summary):
    --   TYPE [version N] seq= ack= snode:sport -> tnode:tport [self-test]
    --   reason= session= replaces= window= size= raddr= len= msglen= read=
    --   round= seg k/n
    --   body [FLAGS] [BAD CRC] [BAD LENGTH] [TRUNCATED]
    local info = { type_name(ftype) }
    if version ~= VERSION then
        info[#info + 1] = string.format("[version %d]", version)
    end
    if is_reliable or ftype == TYPE_NACK or ftype == TYPE_OPEN_ACK then
        info[#info + 1] = "seq=" .. seq
    end
    if ftype == TYPE_ACK or bit32.band(flags, FLAG_ACK_VALID) ~= 0 then
        info[#info + 1] = "ack=" .. ack
    end
    info[#info + 1] = string.format("%d:%d -> %d:%d", snode, sport, tnode, tport)
    if tport == PORT_NONE then
        info[#info + 1] = "[self-test]"
    end
    if ftype == TYPE_NACK then
        info[#info + 1] = "reason=" .. nack_name(status)
    end
    if is_reliable or ftype == TYPE_ACK or ftype == TYPE_NACK or ftype == TYPE_OPEN or ftype == TYPE_OPEN_ACK then
        info[#info + 1] = string.format("session=0x%x", session)
    end
    if ftype == TYPE_OPEN and ack ~= 0 then
        info[#info + 1] = string.format("replaces=0x%x", ack)
    elseif ftype == TYPE_OPEN_ACK then
        info[#info + 1] = "window=" .. msglen
    end
    if is_data or ftype == TYPE_DATAGRAM then
        info[#info + 1] = "size=" .. size
    end
    if has_raddr and captured >= HEADER_LEN + REMOTE_ADDR_LEN then
        info[#info + 1] = "raddr=0x" .. tvb(HEADER_LEN, REMOTE_ADDR_LEN):uint64():tohex()
    end
    if ftype == TYPE_GET then
        info[#info + 1] = "read=" .. msglen
    elseif is_reliable or ftype == TYPE_DATAGRAM then
        info[#info + 1] = "len=" .. paylen
        if msglen ~= paylen then
            info[#info + 1] = "msglen=" .. msglen
        end
    end
    if mapper[ftype] ~= nil then
        info[#info + 1] = "round=" .. seq
    end
    if ftype ~= TYPE_DATA and seg_k ~= nil then
        info[#info + 1] = string.format("seg %d/%d", seg_k, seg_n)
    elseif ftype == TYPE_DATA_LAST then
        info[#info + 1] = "seg last"
    end
    if body_info ~= nil and body_info ~= "" then
        info[#info + 1] = body_info
    end
    if flags ~= 0 then
        info[#info + 1] = "[" .. flags_string(flags) .. "]"
    end
    if crc_status == CRC_BAD then
        info[#info + 1] = "[BAD CRC]"
    end
    if not length_ok then
        info[#info + 1] = "[BAD LENGTH]"
    end
    if truncated then
        info[#info + 1] = "[TRUNCATED]"
    end
    pinfo.cols.info = table.concat(info, " ")
    return captured
end

function p_ethergm.dissector(tvb, pinfo, root)
    return dissect(tvb, pinfo, root)
end

--------------------------------------------------------------------------
-- Registration and preferences
--------------------------------------------------------------------------

p_ethergm.prefs.ethertype = Pref.uint("EtherType",
    ETHERGM_DEFAULT_ETHERTYPE,
    "EtherType on which EtherGM frames are carried, in decimal (default 34997 = 0x88B5)")

local ethertype_table = DissectorTable.get("ethertype")
local registered_ethertype = ETHERGM_DEFAULT_ETHERTYPE
ethertype_table:add(registered_ethertype, p_ethergm)

function p_ethergm.prefs_changed()
    local et = p_ethergm.prefs.ethertype
    if et ~= registered_ethertype then
        ethertype_table:remove(registered_ethertype, p_ethergm)
        registered_ethertype = et
        ethertype_table:add(registered_ethertype, p_ethergm)
    end
end

function p_ethergm.init()
    seg_size = {}
end
