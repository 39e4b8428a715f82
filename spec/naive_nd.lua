-- spec/naive_nd.lua: plain-Lua pieces for the naive references of spec/cases/*.lua (index
-- arithmetic over row-major flat lists of plain numbers; no fastnn op beyond to_flat/shape and
-- building the result with fnn.tensor).
local fnn = require 'fastnn'
local M = {}

function M.numel(shape)
   local n = 1
   for _, d in ipairs(shape) do n = n * d end
   return n
end

-- the 0-based flat offset of 1-based index idx in a row-major shape
function M.offset(shape, idx)
   local o = 0
   for d = 1, #shape do o = o * shape[d] + (idx[d] - 1) end
   return o
end

-- f(idx) for every 1-based index of shape, in row-major order (idx is reused: copy to keep)
M.each = require('support').each_index

-- ids 1..size, repeats included (deterministic), int64, of the given shape
function M.some_ids(shape, size)
   local v = {}
   for i = 1, M.numel(shape) do v[i] = (i * 53 + 5) % size + 1 end
   return fnn.tensor(v, shape):long()
end

-- the transpose of a [r, c], by a loop
function M.transposed(a)
   local v, r, c, out = a:to_flat(), a:shape()[1], a:shape()[2], {}
   for i = 1, r do for j = 1, c do out[(j - 1) * r + i] = v[(i - 1) * c + j] end end
   return fnn.tensor(out, {c, r})
end

-- a tensor from f(idx) over every index of shape
function M.build(shape, f)
   local out = {}
   M.each(shape, function(idx) out[#out + 1] = f(idx) end)
   if #shape == 0 then return fnn.tensor(out[1]) end
   return fnn.tensor(out, shape)
end

-- plain values of t and a reader by 1-based index
function M.reader(t)
   local v, shape = t:to_flat(), t:shape()
   return function(idx) return v[M.offset(shape, idx) + 1] end, shape, v
end

-- a reader of t's values permuted: out index idx reads t at idx[perm^-1] (torch's permute(perm))
function M.permuted(t, perm)
   local get, shape = M.reader(t)
   local pshape, src = {}, {}
   for d, p in ipairs(perm) do pshape[d] = shape[p] end
   return function(idx)
      for d, p in ipairs(perm) do src[p] = idx[d] end
      return get(src)
   end, pshape
end

-- a reader of small (shape sshape) broadcast right-aligned against a larger index
function M.broadcast(t)
   local get, shape = M.reader(t)
   local src = {}
   return function(idx)
      local off = #idx - #shape
      for d = 1, #shape do src[d] = shape[d] == 1 and 1 or idx[d + off] end
      return get(src)
   end
end

-- each line of a reader (shape) along dim d through f(line) -> a list of m values; the result
-- has shape[d] = m (sort, topk)
function M.along(get, shape, d, f)
   local outer = {}
   for i = 1, #shape do outer[i] = i == d and 1 or shape[i] end
   local results, m = {}, nil
   M.each(outer, function(idx)
      local line, at = {}, {}
      for i = 1, #idx do at[i] = idx[i] end
      for r = 1, shape[d] do at[d] = r; line[r] = get(at) end
      local y = f(line)
      m = #y
      results[M.offset(outer, idx)] = y
   end)
   local oshape = {}
   for i = 1, #shape do oshape[i] = i == d and m or shape[i] end
   return M.build(oshape, function(idx)
      local r = idx[d]
      idx[d] = 1
      local y = results[M.offset(outer, idx)][r]
      idx[d] = r
      return y
   end)
end

function M.sigmoid(x) return 1 / (1 + math.exp(-x)) end
function M.tanh(x)
   local e = math.exp(-2 * math.abs(x))
   local t = (1 - e) / (1 + e)
   return x < 0 and -t or t
end

-- elementwise combination of same-shaped tensors: f(a1, a2, ...) per element
function M.zip(f, ...)
   local ts = {...}
   local vs = {}
   for i, t in ipairs(ts) do vs[i] = t:to_flat() end
   local out, args = {}, {}
   for k = 1, #vs[1] do
      for i = 1, #vs do args[i] = vs[i][k] end
      out[k] = f(unpack(args, 1, #vs))
   end
   return fnn.tensor(out, ts[1]:shape())
end

return M
