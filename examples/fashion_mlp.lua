-- fashion_mlp: the default demo (tools/setup.sh runs it). It is examples/mnist_mlp.lua on
-- Fashion-MNIST from the Debian package dataset-fashion-mnist, 3 epochs: an MLP that reaches
-- about 86% test accuracy in a few seconds. Every option of mnist_mlp works here too.
--   fastnn-lua examples/fashion_mlp.lua               # 3 epochs
--   fastnn-lua examples/fashion_mlp.lua --epochs 10   # about 88-89%
--   fastnn-lua examples/fashion_mlp.lua --quick       # 3000 images (CI)
-- Prints and writes what mnist_mlp does (the checkpoint and pictures under --out).
local dir = arg[0]:match('^(.*)/') or '.'
-- later options win, so the user's own --epochs or --dataset replace these
local argv = {[0] = dir .. '/mnist_mlp.lua', '--dataset', 'fashion', '--epochs', '3'}
for i = 1, #arg do argv[#argv + 1] = arg[i] end
arg = argv
dofile(arg[0])
