-- wrk -s bench/wrk/pipeline.lua URL -- D: D requests back to back in one write, as wrk's own
-- scripts/pipeline.lua does; each the GET / wrk sends without a script (wrk.format(): its method,
-- the URL's path, its Host header), so with D = 1 this is wrk's plain request.
--
-- wrk counts every response as a request, but sends the next batch only when all D are back, and
-- records one latency per batch: from the batch's first write to its last response. Defining
-- request() makes wrk call it for every batch (a Lua call per batch, as with wrk's script).
init = function(args)
   local depth = tonumber(args[1] or "1")
   if depth == nil or depth < 1 or depth ~= math.floor(depth) then
      error("pipeline.lua: the depth is a whole number from 1, e.g. -- 16")
   end
   local r = {}
   for i = 1, depth do
      r[i] = wrk.format()
   end
   req = table.concat(r)
end

request = function()
   return req
end
