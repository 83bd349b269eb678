"""The sink's options and its check of the DataFrame's columns, at writer creation."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from amqp_spark import schema
from amqp_spark.options import OptionError
from amqp_spark.sink import make_batch_writer, make_stream_writer
from amqp_spark.sink.columns import SchemaError, plan_columns
from amqp_spark.sink.settings import SinkSettings

URI = "amqp://guest:guest@127.0.0.1:5672/%2F"


def settings(**options: str) -> SinkSettings:
    return SinkSettings.parse({"uri": URI, **options})


def struct(**fields: T.DataType) -> T.StructType:
    return T.StructType([T.StructField(name, dtype) for name, dtype in fields.items()])


def test_defaults_are_persistent_confirmed_not_mandatory() -> None:
    s = settings()
    assert (s.delivery_mode, s.confirm, s.mandatory) == (2, True, False)
    assert (s.exchange, s.routing_key) == (None, None)


def test_options_are_parsed_case_insensitively() -> None:
    s = SinkSettings.parse(
        {"URI": URI, "deliverymode": "transient", "MAXINFLIGHT": "10", "exchange": ""}
    )
    assert (s.delivery_mode, s.max_in_flight, s.exchange) == (1, 10, "")


def test_unknown_option_is_refused_with_the_closest_name() -> None:
    with pytest.raises(OptionError, match="did you mean 'routingKey'"):
        settings(routingkeys="k")


def test_reader_option_is_refused_by_the_sink() -> None:
    with pytest.raises(OptionError, match="'queue'"):
        settings(queue="q")


def test_uri_is_required() -> None:
    with pytest.raises(OptionError, match="'uri'.*required"):
        SinkSettings.parse({})


def test_bad_delivery_mode_lists_what_is_accepted() -> None:
    with pytest.raises(OptionError, match="persistent"):
        settings(deliveryMode="forever")


def test_the_source_schema_is_accepted_whole() -> None:
    plan = plan_columns(schema.spark_schema(), settings())
    receive_only = {"queue", "delivery_tag", "redelivered", "offset"}
    assert set(plan.index) == set(schema.COLUMN_NAMES) - receive_only
    assert not plan.body_is_string


def test_string_body_and_narrower_integers_are_accepted() -> None:
    plan = plan_columns(
        struct(body=T.StringType(), priority=T.ByteType(), delivery_mode=T.LongType()),
        settings(),
    )
    assert plan.body_is_string
    assert plan.index == {"body": 0, "priority": 1, "delivery_mode": 2}


def test_column_names_match_case_insensitively() -> None:
    plan = plan_columns(struct(Body=T.BinaryType(), Routing_Key=T.StringType()), settings())
    assert plan.index == {"body": 0, "routing_key": 1}


def test_missing_body_says_what_is_expected_and_given() -> None:
    with pytest.raises(SchemaError) as caught:
        plan_columns(struct(routing_key=T.StringType()), settings())
    text = str(caught.value)
    assert "column 'body' is missing" in text
    assert "body binary|string" in text and "headers map<string,string>" in text
    assert "Given: struct<routing_key:string>" in text


def test_wrong_types_are_all_listed() -> None:
    with pytest.raises(SchemaError) as caught:
        plan_columns(
            struct(body=T.IntegerType(), headers=T.MapType(T.StringType(), T.IntegerType())),
            settings(),
        )
    text = str(caught.value)
    assert "column 'body' is int, expected binary or string" in text
    assert "column 'headers' is map<string,int>, expected map<string,string>" in text


def test_unknown_column_is_refused_with_a_hint() -> None:
    with pytest.raises(SchemaError, match="'routingkey' is not a sink column.*'routing_key'"):
        plan_columns(struct(body=T.BinaryType(), routingkey=T.StringType()), settings())


def test_unknown_columns_are_ignored_when_asked() -> None:
    plan = plan_columns(
        struct(body=T.BinaryType(), total=T.DoubleType()), settings(ignoreExtraColumns="true")
    )
    assert plan.index == {"body": 0}


def test_options_override_address_columns() -> None:
    plan = plan_columns(
        struct(body=T.BinaryType(), exchange=T.StringType(), routing_key=T.StringType()),
        settings(exchange="out", routingKey="k"),
    )
    assert plan.index == {"body": 0}


def test_writers_check_options_and_schema_when_built() -> None:
    with pytest.raises(SchemaError):
        make_batch_writer({"uri": URI}, struct(payload=T.BinaryType()))
    with pytest.raises(OptionError):
        make_stream_writer({"uri": URI, "mandatroy": "true"}, struct(body=T.BinaryType()))


def test_stream_writer_ignores_the_options_spark_adds() -> None:
    writer = make_stream_writer(
        {"uri": URI, "checkpointlocation": "/tmp/x", "queryname": "q"}, struct(body=T.BinaryType())
    )
    assert writer.settings.uri == URI  # type: ignore[attr-defined]
