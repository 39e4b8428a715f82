-- The bfloat16 rounding the specs hold fastnn to, written independently of it: x (a float32 value)
-- to the nearest bfloat16, ties to even, in double arithmetic (x scaled so that bf16's 8 significant
-- bits are the integer part, rounded, scaled back; no type punning, which LuaJIT's traces may
-- reorder through differently typed FFI pointers). NaN stays NaN; past bf16's largest finite, inf.
local fnn = require 'fastnn'

local M = {}

M.BF16_MAX = (2 - 2 ^ -7) * 2 ^ 127

function M.round(x)
   if x ~= x or x == 0 or x == math.huge or x == -math.huge then return x end
   local _, e = math.frexp(x)                         -- |x| in [2^(e-1), 2^e)
   local scale = 2 ^ (math.max(e, -125) - 8)          -- bf16's spacing there (subnormals: 2^-133)
   local q = x / scale
   local r = math.floor(q + 0.5)
   if r - q == 0.5 and r % 2 ~= 0 then r = r - 1 end  -- a tie goes to the even neighbour
   local y = r * scale
   if math.abs(y) > M.BF16_MAX then return y > 0 and math.huge or -math.huge end
   return y
end

-- a float32 tensor of t's values rounded to bf16
function M.rounded(t)
   local flat = t:to_flat()
   for i = 1, #flat do flat[i] = M.round(flat[i]) end
   return fnn.tensor(flat, t:shape())
end

return M
