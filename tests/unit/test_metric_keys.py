"""The metric keys of metric_keys are the exact strings the tasks write and the report reads."""

from timerepro import metric_keys as mk


def test_link_prediction_keys():
    assert mk.link_prediction("test", "transductive", "random", "ap") == "test_transductive_random_ap"
    assert mk.link_prediction("val", "inductive", "historical", "auc_whole") == "val_inductive_historical_auc_whole"
    assert mk.evaluated("test", "inductive", "inductive") == "test_inductive_inductive"


def test_noise_keys_print_the_ratio_with_g():
    assert mk.noise(0.0, "ap") == "test_transductive_random_noise0_ap"
    assert mk.noise(0.2, "auc") == "test_transductive_random_noise0.2_auc"
    assert mk.noise(1, "ap") == "test_transductive_random_noise1_ap"
    assert mk.noise(0.5, "ap", "inductive") == "test_inductive_random_noise0.5_ap"  # the new-node test edges


def test_node_classification_and_history_keys():
    assert mk.node_classification("test", "auc") == "test_auc"
    assert mk.node_classification("val", "loss") == "val_loss"
    assert mk.validation("test_accuracy") == "val_test_accuracy"



def test_the_link_prediction_task_and_noise_probe_write_these_strings():
    """The task's parts and measures (tasks/link_prediction/evaluation.py) give the keys records have always held."""
    from timerepro.tasks.link_prediction.evaluation import METRIC_KEYS, PARTS

    assert {(mask, part, setting) for _, mask, part, setting in PARTS} == {
        ("val", "val", "transductive"), ("new_node_val", "val", "inductive"),
        ("test", "test", "transductive"), ("new_node_test", "test", "inductive")}
    assert sorted(mk.link_prediction(p, s, "historical", k) for _, _, p, s in PARTS for k in METRIC_KEYS) == sorted(
        f"{p}_{s}_historical_{k}" for p in ("val", "test") for s in ("transductive", "inductive")
        for k in ("ap", "auc", "ap_whole", "auc_whole"))
