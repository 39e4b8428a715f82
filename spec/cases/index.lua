-- Cases for core/ops/index.c, one or more per registered op, each with a naive reference (PyTorch's
-- index_select, gather, scatter_add and masked_fill definitions by loops). Only the
-- data inputs are differentiated; index and mask tensors are fixed in fn, with
-- repeated ids so the accumulating rules are exercised, and transposed inputs
-- so the kernels see strides. They drive CUDA parity too, so ids and masks are
-- made on the input's device: int64 ids (a GPU reads no other), and float32
-- ones on the CPU where a case asks (its float path); spec/cuda_parity_spec.lua
-- adds sweeps over sizes, int64 inputs, embedding, take_rows and bad ids.
-- Format: see spec/cases/elementwise.lua.
local fnn = require 'fastnn'

local function u(shape) return fnn.rand(shape) * 4 - 2 end
-- ids t on like's device, int64; float: float32 on the CPU
local function ids(like, t, float)
   local i = fnn.tensor(t)
   if float and tostring(like:device()) == 'cpu' then return i end
   return i:long():to(like:device())
end
local function on(like, t) return fnn.tensor(t):to(like:device()) end
-- n ids in 1..size, repeats included
local function some(n, size)
   local v = {}
   for i = 1, n do v[i] = (i * 53 + 5) % size + 1 end
   return v
end

-- ---- naive references ----
local N_ = require 'naive_nd'
-- ids as a reader by 1-based index
local function id_reader(t) return N_.reader(fnn.tensor(t)) end
local function index_select_ref(a, d, idv)
   local get, shape = N_.reader(a)
   local oshape = {}
   for i, n in ipairs(shape) do oshape[i] = i == d and #idv or n end
   return N_.build(oshape, function(idx)
      local at = {}
      for i, k in ipairs(idx) do at[i] = i == d and idv[k] or k end
      return get(at)
   end)
end
-- out[i][j] = a[ids[i][j]][j] (d 1) or a[i][ids[i][j]] (d 2)
local function gather_ref(a, d, idt)
   local get = N_.reader(a)
   local gi, ishape = id_reader(idt)
   return N_.build(ishape, function(idx)
      local at = {idx[1], idx[2]}
      at[d] = gi(idx)
      return get(at)
   end)
end
-- x with src[i][j] added at [ids[i][j]][j] (d 1) or [i][ids[i][j]] (d 2), over the ids' shape
local function scatter_add_ref(x, d, idt, src)
   local get, shape, v = N_.reader(x)
   local out = {}
   for k = 1, #v do out[k] = v[k] end
   local gs = N_.reader(src)
   local gi, ishape = id_reader(idt)
   N_.each(ishape, function(idx)
      local at = {idx[1], idx[2]}
      at[d] = gi(idx)
      local k = N_.offset(shape, at) + 1
      out[k] = out[k] + gs(idx)
   end)
   return fnn.tensor(out, shape)
end
local function masked_fill_ref(a, mask, value)
   local get, shape = N_.reader(a)
   local gm = N_.broadcast(fnn.tensor(mask))
   return N_.build(shape, function(idx) return gm(idx) ~= 0 and value or get(idx) end)
end

return {
   {op = 'index_select', inputs = function() return u{4, 3} end,
    fn = function(a) return a:index_select(1, ids(a, {2, 4, 2, 1})) end,
    ref = function(a) return index_select_ref(a, 1, {2, 4, 2, 1}) end},
   {op = 'index_select', inputs = function() return u{4, 3} end,
    fn = function(a) return a:t():index_select(2, ids(a, {3, 3, 1}, true)) end,
    ref = function(a) return index_select_ref(a:t(), 2, {3, 3, 1}) end},
   -- more rows than a GPU block's threads, 200 repeated ids
   {op = 'index_select', inputs = function() return u{129, 2} end,
    fn = function(a) return a:index_select(1, ids(a, some(200, 129))) end,
    ref = function(a) return index_select_ref(a, 1, some(200, 129)) end},
   {op = 'gather', inputs = function() return u{3, 4} end,
    fn = function(a) return a:gather(2, ids(a, {{1, 1, 4}, {2, 3, 2}, {4, 4, 4}}, true)) end,
    ref = function(a) return gather_ref(a, 2, {{1, 1, 4}, {2, 3, 2}, {4, 4, 4}}) end},
   {op = 'gather', inputs = function() return u{4, 3} end,
    fn = function(a) return a:t():gather(1, ids(a, {{1, 3}, {2, 2}})) end,
    ref = function(a) return gather_ref(a:t(), 1, {{1, 3}, {2, 2}}) end},
   {op = 'scatter_add', inputs = function() return u{3, 4}, u{2, 3} end,
    fn = function(x, src) return x:scatter_add(2, ids(x, {{1, 1, 4}, {3, 2, 3}}, true), src) end,
    ref = function(x, src) return scatter_add_ref(x, 2, {{1, 1, 4}, {3, 2, 3}}, src) end},
   -- index smaller than src: the src places it does not name get no gradient
   {op = 'scatter_add', inputs = function() return u{4, 3}, u{3, 3} end,
    fn = function(x, src) return x:t():scatter_add(1, ids(x, {{2, 2}, {1, 3}}), src:t()) end,
    ref = function(x, src) return scatter_add_ref(x:t(), 1, {{2, 2}, {1, 3}}, src:t()) end},
   {op = 'masked_fill', inputs = function() return u{2, 3} end,
    fn = function(a) return a:masked_fill(on(a, {1, 0, 1}), 7) end,
    ref = function(a) return masked_fill_ref(a, {1, 0, 1}, 7) end},
   {op = 'masked_fill', inputs = function() return u{3, 2} end,
    fn = function(a) return a:t():masked_fill(on(a, {{0, 1, 1}, {1, 0, 0}}), -1) end,
    ref = function(a) return masked_fill_ref(a:t(), {{0, 1, 1}, {1, 0, 0}}, -1) end},
}
