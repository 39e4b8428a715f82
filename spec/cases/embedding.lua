-- Gradcheck cases for core/ops/embedding.c: repeated ids (their gradients add up), ids of two
-- dims, float ids, a transposed weight, a padding_idx that the ids never hit (a hit row gets no
-- gradient by design, which embedding_spec checks).
local fnn = require 'fastnn'

local function u(...) return fnn.rand(...) * 4 - 2 end
local ids1 = fnn.long{3, 1, 3, 5}
local ids2 = fnn.long{{2, 4, 2}, {1, 1, 5}}

return {
   {op = 'embedding', inputs = function() return u(5, 3) end,
    fn = function(w) return fnn.embedding(ids1, w) end},
   {op = 'embedding', inputs = function() return u(5, 2) end,
    fn = function(w) return fnn.embedding(ids2, w, {padding_idx = 3}) end},
   {op = 'embedding', inputs = function() return u(4, 6) end,   -- weight [6, 4]^T; float ids
    fn = function(w) return fnn.embedding(fnn.tensor{6, 2, 2}, w:t()) end},
}
