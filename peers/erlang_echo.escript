#!/usr/bin/env escript
%% An echo server in Erlang/OTP: a process per connection with gen_tcp,
%% on the BEAM's schedulers and its poll set (epoll underneath).
%%
%% usage: escript erlang_echo.escript PORT [ADDR]    (PORT 0: any free port)
%%
%% Echoes every byte; when the client half-closes, sends what is left and
%% then EOF. Prints `READY ADDR:PORT` once it listens; the VM ends on
%% SIGTERM (OTP's default handler stops it cleanly).
-mode(compile).

main([Port]) -> main([Port, "127.0.0.1"]);
main([Port, Addr]) ->
    {ok, Ip} = inet:parse_address(Addr),
    case gen_tcp:listen(list_to_integer(Port),
                        [binary, {ip, Ip}, {active, false}, {reuseaddr, true},
                         {backlog, 4096}, {exit_on_close, false}]) of
        {ok, L} ->
            {ok, {_, P}} = inet:sockname(L),
            io:format("READY ~s:~b~n", [Addr, P]),
            accept(L);
        {error, E} ->
            io:format(standard_error, "erlang_echo: ~p~n", [E]),
            halt(1)
    end;
main(_) ->
    io:format(standard_error, "usage: escript erlang_echo.escript PORT [ADDR]~n", []),
    halt(2).

accept(L) ->
    case gen_tcp:accept(L) of
        {ok, S} ->
            Pid = spawn(fun() -> receive go -> echo(S) end end),
            ok = gen_tcp:controlling_process(S, Pid),
            Pid ! go;
        %% Out of descriptors, the connection stays queued and accept
        %% fails again at once: wait, as ranch's acceptors do.
        {error, emfile} -> receive after 100 -> ok end;
        {error, _} -> ok
    end,
    accept(L).

echo(S) ->
    case gen_tcp:recv(S, 0) of
        {ok, Data} ->
            case gen_tcp:send(S, Data) of
                ok -> echo(S);
                {error, _} -> gen_tcp:close(S)
            end;
        {error, closed} ->
            gen_tcp:shutdown(S, write),
            gen_tcp:close(S);
        {error, _} ->
            gen_tcp:close(S)
    end.
