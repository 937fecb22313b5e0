"""Resource limits of the template sandbox: one render may never hold a worker longer or larger than its limit.

Why guards *before* the operation: a filter, a method or an operator runs as one C-level or library call that no
deadline can interrupt, so checking its result afterwards is too late: unguarded,
``('a\\n' * 200000) | indent(10000)`` runs 11 s and allocates 3.8 GB before a size check could see it. So every
operation whose output can grow with an *argument* (output ≈ input × argument) estimates its output from its inputs
first and refuses when the estimate is over the limit. Operations whose output is at most a small constant times
their input are only checked afterwards.

The audit, by family (Jinja2 3.1 built-ins plus Poolboy's filters and the methods reachable in the sandbox):

- estimated before the call: filters ``indent``, ``center``, ``replace``, ``format``, ``join``, ``wordwrap``,
  ``truncate``, ``urlize``, ``xmlattr``, ``hold`` (fill), ``slice``, ``sum`` (of sequences, which is quadratic),
  ``tojson``/``to_json``/``object`` (indent, separators), ``pprint``; str/bytes methods ``center``, ``ljust``,
  ``rjust``, ``zfill``, ``expandtabs``, ``replace``, ``join``, ``format``, ``format_map``, ``translate``;
  ``int.to_bytes``; operators ``*``, ``+``, ``**``, ``%``, ``~``; the ``lipsum`` global; JMESPath ``join``;
- bounded by the sandbox itself: ``range`` (100 000 items), attribute access (``__class__``, ``__globals__``,
  ``mro``… are unsafe), mutation of lists and dicts (immutable sandbox);
- at most a constant factor of their input, checked after the call: every other filter (``escape``,
  ``urlencode``, ``title``, ``upper``, ``string``, ``list``, ``sort``, ``unique``, ``map``, ``select``…), every Jinja
  test (comparisons, ``divisibleby``, ``in``…: no output at all), every other method.

On top of that, per top-level render (template vars rendered lazily share it): a wall-clock deadline checked at
every call, attribute or item access, operator, filter, loop step and inside every size measurement; a budget of
loop iterations; a budget of everything produced (characters of strings and items of containers made by guarded
operations, :data:`.limits.MAX_PRODUCED`), so that many operations each under the limit cannot add up to gigabytes;
and a logical-size limit on every container that template syntax builds (literals, ``*``, ``+``, filter results), so
that no value can be a small graph of shared references that expands to an astronomical size when it is compared,
sorted, printed or serialised.

The modules: :mod:`.limits` (the limits, :class:`~.limits.LimitError`, the per-render budget and loop charging),
:mod:`.measure` (logical sizes, bounding and charging a result), :mod:`.estimates` (output bounds of formatting,
replacing, joining, serialising), :mod:`.filters` (guarded filters and ``lipsum``), :mod:`.methods` (guarded method
calls), :mod:`.operators` (guarded operators, concatenation, container literals).
"""
