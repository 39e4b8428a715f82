-- nn.TransformerEncoder(width, heads, mlp_width, layers, {dropout = 0.1, norm_first = false,
--     activation = 'relu', causal = false, norm = norm_first}): `layers` nn.TransformerEncoderLayer
-- in a row (layers.1 .. layers.n) and an optional final LayerNorm `norm`; forward(x, {causal,
-- key_padding_mask}) with x [N, T, width]. nn.TransformerStack with its default of no causal mask.
local nn = require 'fastnn.nn'

local Encoder = nn.TransformerStack:extend('TransformerEncoder')
nn.TransformerEncoderLayer._declare('nn.TransformerEncoder', nn.TransformerStack._EXTRA)

return Encoder
