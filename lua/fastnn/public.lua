-- fastnn.public(impl): a public function from an implementation that raises anywhere inside it.
-- The error comes back at the caller's line; a message that carries a position inside fastnn's
-- own modules loses it (the mistake is the caller's, not a line of ours), and Ctrl-C's
-- 'interrupted' passes through untouched. (serialize.lua and distributed.lua use it.)
return function(impl)
   return function(...)
      local r = {pcall(impl, ...)}
      if not r[1] then
         local err = r[2]
         if type(err) == 'string' then
            local file, rest = err:match('^([^:\n]+):%d+: (.*)$')
            if file and file:find('fastnn', 1, true) then err = rest end
            if err == 'interrupted' then error(err, 0) end
         end
         error(err, 2)
      end
      return unpack(r, 2, table.maxn(r))
   end
end
