-- simple_mlp: the smallest complete training loop. A 2-8-1 MLP with tanh learns XOR, which no
-- linear model can, with plain SGD (momentum 0.9) on the mean squared error.
--   fastnn-lua examples/simple_mlp.lua            # 1000 steps
--   fastnn-lua examples/simple_mlp.lua --quick    # 300 steps (CI)
--   fastnn-lua examples/simple_mlp.lua --help
-- Prints the loss every 100 steps, the network's answer for each of the four inputs and
-- `accuracy 1.00 (4 of 4)` when every answer rounds to the right bit.
-- Pictures (under --out, default ./fastnn-out): simple_mlp_loss.png (loss per step) and
-- simple_mlp_surface.png (the network's output over the unit square: XOR's checkerboard).
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local fnn = require 'fastnn'
local nn, optim = fnn.nn, fnn.optim
local plot = require 'fastnn.plot'
local cli, pictures = require 'common.cli', require 'common.pictures'

local opts = cli.parse{
   name = 'simple_mlp', about = 'A 2-8-1 tanh MLP learns XOR with SGD and momentum.',
   options = { {'steps', 1000, 'training steps (one step sees all four rows)'},
               {'lr', 0.1, 'learning rate'} },
   quick = {steps = 300},
}
fnn.manual_seed(opts.seed)

local inputs = fnn.tensor{{0, 0}, {0, 1}, {1, 0}, {1, 1}}
local targets = fnn.tensor{{0}, {1}, {1}, {0}}

local model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
local opt = optim.SGD(model:parameters(), opts.lr, {momentum = 0.9})

local losses = {}
for step = 1, opts.steps do
   local loss = nn.mse(model(inputs), targets)
   opt:zero_grad()
   loss:backward()
   opt:step()
   losses[step] = loss:item()
   if step == 1 or step % 100 == 0 then print(('step %4d  loss %.3e'):format(step, losses[step])) end
end

local out = fnn.no_grad(function() return model(inputs) end):to_flat()
local x, want = inputs:to_table(), targets:to_flat()
local right = 0
for i = 1, 4 do
   print(('%d xor %d -> %.3f'):format(x[i][1], x[i][2], out[i]))
   if (out[i] > 0.5 and 1 or 0) == want[i] then right = right + 1 end
end
print(('accuracy %.2f (%d of 4)'):format(right / 4, right))

pictures.loss_curves(pictures.path(opts, 'simple_mlp_loss.png'), {train = losses},
                     {title = 'XOR: training loss (MSE)', xlabel = 'step', logy = true})

-- the output on a 21 x 21 grid over [0, 1]^2, one forward pass for all 441 points
local n, grid = 21, {}
for i = 0, n - 1 do
   for j = 0, n - 1 do grid[#grid + 1] = {j / (n - 1), i / (n - 1)} end
end
local surface = fnn.no_grad(function() return model(fnn.tensor(grid)) end):reshape{n, n}
local ticks = {}
for i = 1, n do ticks[i] = (i - 1) % 10 == 0 and ('%g'):format((i - 1) / (n - 1)) or '' end
pictures.wrote(plot.heatmap{path = pictures.path(opts, 'simple_mlp_surface.png'), matrix = surface,
                            row_labels = ticks, col_labels = ticks, title = 'XOR: network output',
                            xlabel = 'input 1', ylabel = 'input 2'})
if right < 4 then os.exit(1) end
