"""``mns-gateway report``: delivery reports from operation logs. Listed on every install: the
options live in :mod:`gateway.pipeline.report`, which imports no PySpark, and without the
pipeline extra or Java the command says so in one line."""

from __future__ import annotations

from gateway.cli.common import Commands


def add_command(commands: Commands) -> None:
    from gateway.pipeline.report import add_report_arguments, run_report

    parser = commands.add_parser(
        "report", help="delivery reports from operation logs (needs the pipeline extra and Java)"
    )
    add_report_arguments(parser)
    parser.set_defaults(handler=run_report)
