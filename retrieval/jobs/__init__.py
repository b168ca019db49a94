"""The job queue: paperbot's slow work (syncs, scaled-out ingests, repairs) as jobs that
``paperbot worker`` processes run, on procrastinate over the PostgreSQL database.

``service.JobService`` is what the doors use: it submits a job to the queue and follows it to
its outcome, or, with no queue (the embedded default: SQLite, or ``PAPERBOT_JOB_QUEUE`` unset),
runs the same work in the calling process. The parts, lowest first:

* ``app``: the procrastinate app built from the settings' PostgreSQL URL, and its tasks;
* ``tasks``: what each task does, given the worker's ``Assistant`` (no queue code in them);
* ``staging``: the records of a scaled-out ingest, staged in the database part by part (the
  workers need not share a filesystem), and the results jobs leave for their submitters;
* ``ingest_parts``: one part written as a single process would, its encoding done before the
  writer lock and the lock held per batch;
* ``schedule``: the periodic sync deferred once per period for the whole deployment, and the
  jobs of dead workers put back in the queue;
* ``status``: the queue's state for ``paperbot doctor``;
* ``worker``: the worker process (``paperbot worker``).

How it runs, and why procrastinate: ``docs/workers.md``.
"""
