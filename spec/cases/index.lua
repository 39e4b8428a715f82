-- Cases for core/ops/index.c, one or more per registered op, each with a naive reference (PyTorch's
-- index_select, gather, scatter_add and masked_fill definitions by loops). Only the
-- data inputs are differentiated; index and mask tensors are fixed in fn, with
-- repeated ids so the accumulating rules are exercised, and transposed inputs
-- so the kernels see strides. They drive CUDA parity too, so ids and masks are
-- made on the input's device: int64 ids (a GPU reads no other), and float32
-- ones on the CPU where a case asks (its float path). The sweeps at the end (from
-- the CUDA parity run) go over the launch edges with 300 repeated ids, gather
-- along each dim of a 3-d input, int64 inputs (values only) and 0-D ids; they
-- gradcheck at their own small sizes (n nil). take_rows and ids out of range (nan
-- on a GPU, an error on the CPU) stay in spec/cuda_parity_spec.lua.
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
local some_ids = N_.some_ids
local function index_select_ref(a, d, idv)
   if fnn.is_tensor(idv) then idv = idv:to_flat() end
   local get, shape = N_.reader(a)
   local oshape = {}
   for i, n in ipairs(shape) do oshape[i] = i == d and #idv or n end
   return N_.build(oshape, function(idx)
      local at = {}
      for i, k in ipairs(idx) do at[i] = i == d and idv[k] or k end
      return get(at)
   end)
end
-- out[idx] = a[idx with dim d replaced by ids[idx]] (ids a table or an int64 tensor)
local function as_reader(t) return N_.reader(fnn.is_tensor(t) and t or fnn.tensor(t)) end
local function gather_ref(a, d, idt)
   local get = N_.reader(a)
   local gi, ishape = as_reader(idt)
   return N_.build(ishape, function(idx)
      local at = {}
      for i, k in ipairs(idx) do at[i] = k end
      at[d] = gi(idx)
      return get(at)
   end)
end
-- x with src[idx] added at idx with dim d replaced by ids[idx], over the ids' shape
local function scatter_add_ref(x, d, idt, src)
   local _, shape, v = N_.reader(x)
   local out = {}
   for k = 1, #v do out[k] = v[k] end
   local gs = N_.reader(src)
   local gi, ishape = as_reader(idt)
   N_.each(ishape, function(idx)
      local at = {}
      for i, k in ipairs(idx) do at[i] = k end
      at[d] = gi(idx)
      local k = N_.offset(shape, at) + 1
      out[k] = out[k] + gs(idx)
   end)
   return fnn.tensor(out, shape)
end
local function masked_fill_ref(a, mask, value)
   local get, shape = N_.reader(a)
   local gm = N_.broadcast(fnn.is_tensor(mask) and mask or fnn.tensor(mask))
   return N_.build(shape, function(idx) return gm(idx) ~= 0 and value or get(idx) end)
end

local cases = {
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

-- ---- sweeps over sizes (from the CUDA parity run) on int64 ids made on the input's device. Gathers
-- copy: exact; the backward (and scatter_add) add through atomicAdd, whose order (so the last bits)
-- depends on the run where ids repeat: atol 1e-6, rtol 1e-5 ----
local ATOMIC = {1e-6, 1e-5, 1}
local EXACT = {0, 0}
local EDGES = {1, 127, 128, 129, 1025}
-- ids 1..size, repeats included (deterministic), int64 on like's device
local function dev(like, t) return t:to(like:device()) end
-- along dim 1 of [n, 5] with 300 repeated ids; along dim 2 of [3, n]^T with 7 (n nil: gradcheck at 4)
cases[#cases + 1] = {op = 'index_select', sizes = EDGES, parity = ATOMIC, inputs = function(n) return u{n or 4, 5} end,
   fn = function(x) return x:index_select(1, dev(x, some_ids({300}, x:shape()[1]))) end,
   ref = function(x) return index_select_ref(x, 1, some_ids({300}, x:shape()[1])) end}
cases[#cases + 1] = {op = 'index_select', sizes = EDGES, parity = ATOMIC, inputs = function(n) return u{n or 4, 3} end,
   fn = function(x) return x:t():index_select(2, dev(x, some_ids({7}, x:shape()[1]))) end,
   ref = function(x) return index_select_ref(x:t(), 2, some_ids({7}, x:shape()[1])) end}
-- an int64 tensor (values only), and 0-D ids (one row, the dim kept)
cases[#cases + 1] = {op = 'index_select', gradcheck = false, parity = EXACT,
   inputs = function() return some_ids({6, 4}, 1000) end,
   fn = function(x) return x:index_select(2, dev(x, some_ids({9}, 4))) end,
   ref = function(x) return index_select_ref(x, 2, some_ids({9}, 4)) end}
cases[#cases + 1] = {op = 'index_select', parity = EXACT, inputs = function() return u{6, 4} end,
   fn = function(x) return x:index_select(1, dev(x, fnn.tensor({3}):long():reshape{})) end,
   ref = function(x) return index_select_ref(x, 1, {3}) end}
-- gather [4, 6, 5] along each dim, an index [3, 4, 5] smaller outside that dim
for d = 1, 3 do
   local size = ({4, 6, 5})[d]
   cases[#cases + 1] = {op = 'gather', parity = ATOMIC, inputs = function() return u{4, 6, 5} end,
      fn = function(x) return x:gather(d, dev(x, some_ids({3, 4, 5}, size))) end,
      ref = function(x) return gather_ref(x, d, some_ids({3, 4, 5}, size)) end}
end
-- gather of [6, n]^T (n 1025; gradcheck at 7) and of an int64 tensor
cases[#cases + 1] = {op = 'gather', sizes = {1025}, parity = ATOMIC, inputs = function(n) return u{6, n or 7} end,
   fn = function(x) return x:t():gather(2, dev(x, some_ids({x:shape()[2], 2}, 6))) end,
   ref = function(x) return gather_ref(x:t(), 2, some_ids({x:shape()[2], 2}, 6)) end}
cases[#cases + 1] = {op = 'gather', gradcheck = false, parity = EXACT, inputs = function() return some_ids({5, 4}, 99) end,
   fn = function(x) return x:gather(1, dev(x, some_ids({3, 4}, 5))) end,
   ref = function(x) return gather_ref(x, 1, some_ids({3, 4}, 5)) end}
-- scatter_add into [n, 4] along dim 1 from src [300, 4], d x and d src (n nil: gradcheck at 3)
cases[#cases + 1] = {op = 'scatter_add', sizes = {1, 129, 1025}, parity = ATOMIC,
   inputs = function(n) return u{n or 3, 4}, u{300, 4} end,
   fn = function(x, src) return x:scatter_add(1, dev(x, some_ids({300, 4}, x:shape()[1])), src) end,
   ref = function(x, src) return scatter_add_ref(x, 1, some_ids({300, 4}, x:shape()[1]), src) end}
cases[#cases + 1] = {op = 'scatter_add', parity = ATOMIC, inputs = function() return u{5, 7}, u{3, 7} end,
   fn = function(x, src) return x:t():scatter_add(2, dev(x, some_ids({7, 3}, 5)), src:t()) end,
   ref = function(x, src) return scatter_add_ref(x:t(), 2, some_ids({7, 3}, 5), src:t()) end}
-- masked_fill of [n, 3] with a broadcast [1, 3] mask, and of a transposed view by its own sign
-- (a copy or a constant: exact up to the last bit; n nil: gradcheck at 4)
cases[#cases + 1] = {op = 'masked_fill', sizes = {1, 129, 1025}, parity = {0, 1e-6, 1},
   inputs = function(n) return u{n or 4, 3} end,
   fn = function(x) return x:masked_fill(dev(x, fnn.tensor{{1, 0, 1}}), -7.5) end,
   ref = function(x) return masked_fill_ref(x, {{1, 0, 1}}, -7.5) end}
cases[#cases + 1] = {op = 'masked_fill', sizes = {1, 129, 1025}, parity = {0, 1e-6, 1},
   inputs = function(n) return u{3, n or 4} end,
   fn = function(x) return x:t():masked_fill(x:t():gt(0), 0) end,
   ref = function(x)
      local get, shape = N_.permuted(x, {2, 1})
      return N_.build(shape, function(idx) local v = get(idx) return v > 0 and 0 or v end)
   end}

return cases
