-- Receive + delete cycles with per-request MNS signatures (HMAC-SHA1 in LuaJIT's bit library).
local bit = require("bit")
local band, bor, bxor, bnot = bit.band, bit.bor, bit.bxor, bit.bnot
local lshift, rshift, rol, tobit = bit.lshift, bit.rshift, bit.rol, bit.tobit

local function sha1(message)
  local h0, h1, h2, h3, h4 = 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0
  local bits = #message * 8
  message = message .. "\128" .. string.rep("\0", (55 - #message) % 64)
    .. "\0\0\0\0" .. string.char(band(rshift(bits, 24), 255), band(rshift(bits, 16), 255),
                                 band(rshift(bits, 8), 255), band(bits, 255))
  local w = {}
  for chunk = 1, #message, 64 do
    for i = 0, 15 do
      local a, b, c, d = message:byte(chunk + i * 4, chunk + i * 4 + 3)
      w[i] = bor(lshift(a, 24), lshift(b, 16), lshift(c, 8), d)
    end
    for i = 16, 79 do w[i] = rol(bxor(w[i - 3], w[i - 8], w[i - 14], w[i - 16]), 1) end
    local a, b, c, d, e = h0, h1, h2, h3, h4
    for i = 0, 79 do
      local f, k
      if i < 20 then f, k = bor(band(b, c), band(bnot(b), d)), 0x5A827999
      elseif i < 40 then f, k = bxor(b, c, d), 0x6ED9EBA1
      elseif i < 60 then f, k = bor(band(b, c), band(b, d), band(c, d)), 0x8F1BBCDC
      else f, k = bxor(b, c, d), 0xCA62C1D6 end
      a, b, c, d, e = tobit(rol(a, 5) + f + e + k + w[i]), a, rol(b, 30), c, d
    end
    h0, h1, h2, h3, h4 = tobit(h0 + a), tobit(h1 + b), tobit(h2 + c), tobit(h3 + d), tobit(h4 + e)
  end
  local out = {}
  for _, h in ipairs({h0, h1, h2, h3, h4}) do
    out[#out + 1] = string.char(band(rshift(h, 24), 255), band(rshift(h, 16), 255),
                                band(rshift(h, 8), 255), band(h, 255))
  end
  return table.concat(out)
end

local function xor_with(key, byte)
  return (key:gsub(".", function(c) return string.char(bxor(c:byte(), byte)) end))
end

local function hmac_sha1(key, message)
  key = key .. string.rep("\0", 64 - #key)
  return sha1(xor_with(key, 0x5c) .. sha1(xor_with(key, 0x36) .. message))
end

local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function base64(data)
  local out = {}
  for i = 1, #data, 3 do
    local a, b, c = data:byte(i, i + 2)
    local n = lshift(a, 16) + lshift(b or 0, 8) + (c or 0)
    local chars = {}
    for j = 3, 0, -1 do
      local index = band(rshift(n, j * 6), 63) + 1
      chars[#chars + 1] = alphabet:sub(index, index)
    end
    if not b then chars[3], chars[4] = "=", "=" elseif not c then chars[4] = "=" end
    out[#out + 1] = table.concat(chars)
  end
  return table.concat(out)
end

local key_id, secret = os.getenv("BENCH_KEY_ID"), os.getenv("BENCH_SECRET")
local path = "/queues/" .. os.getenv("BENCH_QUEUE") .. "/messages"
local batch = tonumber(os.getenv("BENCH_BATCH"))
local receive_uri = batch > 1 and (path .. "?numOfMessages=" .. batch) or path
-- BENCH_WAIT: long-poll receives (waitseconds) instead of returning at once when empty
local wait = tonumber(os.getenv("BENCH_WAIT") or "0")
if wait > 0 then
  receive_uri = receive_uri .. (batch > 1 and "&" or "?") .. "waitseconds=" .. wait
end

local function signed(method, uri, body)
  local date = os.date("!%a, %d %b %Y %H:%M:%S GMT")
  local content_type = body and "text/xml" or ""
  local to_sign = method .. "\n\n" .. content_type .. "\n" .. date
    .. "\nx-mns-version:2015-06-06\n" .. uri
  local headers = {
    ["Date"] = date,
    ["x-mns-version"] = "2015-06-06",
    ["Authorization"] = "MNS " .. key_id .. ":" .. base64(hmac_sha1(secret, to_sign)),
  }
  if body then headers["Content-Type"] = content_type end
  return wrk.format(method, uri, headers, body)
end

pending = {}   -- delete requests waiting for a connection
deleted, received, empty, failed = 0, 0, 0, 0
local in_flight = {}

request = function()
  local next_delete = table.remove(pending, 1)
  if next_delete then
    in_flight[#in_flight + 1] = next_delete[2]
    return next_delete[1]
  end
  return signed("GET", receive_uri)
end

response = function(status, headers, body)
  if status == 200 then
    local handles = {}
    for handle in body:gmatch("<ReceiptHandle>([^<]+)</ReceiptHandle>") do
      handles[#handles + 1] = handle
    end
    received = received + #handles
    if batch == 1 then
      pending[#pending + 1] = {signed("DELETE", path .. "?ReceiptHandle=" .. handles[1]), 1}
    else
      local xml = "<ReceiptHandles>"
      for _, handle in ipairs(handles) do
        xml = xml .. "<ReceiptHandle>" .. handle .. "</ReceiptHandle>"
      end
      pending[#pending + 1] = {signed("DELETE", path, xml .. "</ReceiptHandles>"), #handles}
    end
  elseif status == 204 then
    deleted = deleted + (table.remove(in_flight, 1) or 0)
  elseif status == 404 then
    empty = empty + 1
  else
    failed = failed + 1
  end
end

local threads = {}
setup = function(thread) threads[#threads + 1] = thread end

done = function(summary, latency, requests)
  local totals = {deleted = 0, received = 0, empty = 0, failed = 0}
  for _, thread in ipairs(threads) do
    for name, _ in pairs(totals) do totals[name] = totals[name] + thread:get(name) end
  end
  io.write(string.format('BENCH {"requests": %d, "seconds": %f, "p50_ms": %f, "p99_ms": %f, '
    .. '"deleted": %d, "received": %d, "empty": %d, "failed": %d, "errors": %d}\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, totals.deleted, totals.received, totals.empty, totals.failed,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
