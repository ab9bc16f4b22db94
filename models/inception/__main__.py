"""`python -m models.inception --model_dir=DIR` trains configs/inception/default.gin on digits."""

from models.core.main import main
from models.core.tasks.image_classification import ImageClassificationTask
from models.inception import model  # noqa: F401 - registers the gin configurables

if __name__ == "__main__":
    main(ImageClassificationTask, family="inception", default_recipe="inception/default.gin")
