-- Cases for core/ops/embedding.c (format: spec/cases/elementwise.lua), each with a naive reference
-- (the weight's row of each id, by a loop): repeated ids (their gradients add up), ids of two
-- dims, float ids, a transposed weight, a padding_idx that the ids never hit (a hit row gets no
-- gradient by design, which embedding_spec checks). They drive CUDA parity too, so the ids are
-- made on the weight's device: int64 (a GPU reads no other), float32 on the CPU where a case asks.
-- The last case is the CUDA parity sweep over the launch edges, where padding_idx is hit (values
-- and gradients against the CPU; its gradcheck size sets none).
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end
-- ids t on like's device, int64; float: float32 on the CPU
local function ids(like, t, float)
   local i = fnn.tensor(t)
   if float and tostring(like:device()) == 'cpu' then return i end
   return i:long():to(like:device())
end
-- n ids in 1..size, repeats included
local function some(n, size)
   local v = {}
   for i = 1, n do v[i] = (i * 53 + 5) % size + 1 end
   return v
end

-- out[..., j] = w[id, j] for each id (padding_idx changes only the gradient)
local N_ = require 'naive_nd'
local function embedding_ref(idv, w)
   if fnn.is_tensor(idv) then idv = idv:to_table() end
   local get, ws = N_.reader(w)
   local ishape = {#idv}
   if type(idv[1]) == 'table' then ishape = {#idv, #idv[1]} end
   local oshape = {}
   for d, n in ipairs(ishape) do oshape[d] = n end
   oshape[#oshape + 1] = ws[2]
   return N_.build(oshape, function(idx)
      local id = #ishape == 1 and idv[idx[1]] or idv[idx[1]][idx[2]]
      return get{id, idx[#idx]}
   end)
end

local cases = {
   {op = 'embedding', inputs = function() return u(5, 3) end,
    fn = function(w) return fnn.embedding(ids(w, {3, 1, 3, 5}), w) end,
    ref = function(w) return embedding_ref({3, 1, 3, 5}, w) end},
   {op = 'embedding', inputs = function() return u(5, 2) end,
    fn = function(w) return fnn.embedding(ids(w, {{2, 4, 2}, {1, 1, 5}}), w, {padding_idx = 3}) end,
    ref = function(w) return embedding_ref({{2, 4, 2}, {1, 1, 5}}, w) end},
   {op = 'embedding', inputs = function() return u(4, 6) end,   -- weight [6, 4]^T; float ids
    fn = function(w) return fnn.embedding(ids(w, {6, 2, 2}, true), w:t()) end,
    ref = function(w) return embedding_ref({6, 2, 2}, w:t()) end},
   -- more rows than a GPU block's threads, 200 repeated ids
   {op = 'embedding', inputs = function() return u(129, 2) end,
    fn = function(w) return fnn.embedding(ids(w, some(200, 129)), w) end,
    ref = function(w) return embedding_ref(some(200, 129), w) end},
}

-- the sweep of the CUDA parity run: [n, 6] weights over the launch edges, ids [4, 300] with repeats
-- and padding_idx 2 (from n 2; n nil: gradcheck at [1, 6], where every id is 1 and no padding is
-- set). Forward: a copy, exact; backward adds through atomicAdd, whose order (so the last bits)
-- depends on the run where ids repeat: atol 1e-6, rtol 1e-5
local function grid(n)
   local v = {}
   for r = 1, 4 do
      v[r] = {}
      for c = 1, 300 do v[r][c] = (((r - 1) * 300 + c) * 53 + 5) % n + 1 end
   end
   return v
end
cases[#cases + 1] = {op = 'embedding', sizes = {1, 127, 128, 129, 1025}, parity = {1e-6, 1e-5, 1},
   inputs = function(n) return u(n or 1, 6) end,
   fn = function(w)
      local n = w:shape()[1]
      return fnn.embedding(ids(w, grid(n)), w, {padding_idx = n >= 2 and 2 or nil})
   end,
   ref = function(w) return embedding_ref(grid(w:shape()[1]), w) end}

return cases
