-- Gradcheck cases for core/ops/view.c (the view family), at least one per registered op.
-- Most cases feed a non-contiguous input (a transpose or a narrow first), so
-- the rules see strided gradients and views of views. Format: see
-- spec/cases/elementwise.lua.
local fnn = require 'fastnn'

local function u(shape) return fnn.rand(shape) * 4 - 2 end

return {
   {op = 'reshape', inputs = function() return u{2, 3, 4} end, fn = function(a) return a:reshape(4, -1) end},
   -- transposed: not viewable, so reshape copies (the node is the same)
   {op = 'reshape', inputs = function() return u{3, 4} end, fn = function(a) return a:t():reshape{2, 6} end},
   {op = 'view', inputs = function() return u{2, 6} end, fn = function(a) return a:narrow(2, 2, 4):view(2, 2, 2) end},
   {op = 'transpose', inputs = function() return u{2, 3, 4} end, fn = function(a) return a:transpose(1, 3) end},
   {op = 'permute', inputs = function() return u{2, 3, 4} end,
    fn = function(a) return a:transpose(1, 2):permute(3, 1, 2) end},
   {op = 'expand', inputs = function() return u{3, 1} end, fn = function(a) return a:expand(2, 3, 4) end},
   {op = 'expand', inputs = function() return u{1, 3} end, fn = function(a) return a:t():expand{-1, 5} end},
   {op = 'narrow', inputs = function() return u{4, 5} end, fn = function(a) return a:t():narrow(2, 2, 2) end},
   {op = 'select', inputs = function() return u{3, 4} end, fn = function(a) return a:t():select(1, 3) end},
   {op = 'squeeze', inputs = function() return u{2, 1, 3, 1} end, fn = function(a) return a:squeeze() end},
   {op = 'squeeze', inputs = function() return u{1, 3} end, fn = function(a) return a:t():squeeze(2) end},
   {op = 'unsqueeze', inputs = function() return u{2, 3} end, fn = function(a) return a:t():unsqueeze(2) end},
   {op = 'flatten', inputs = function() return u{2, 3, 2} end, fn = function(a) return a:transpose(1, 3):flatten(2) end},
}
