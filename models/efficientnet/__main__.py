"""`python -m models.efficientnet --model_dir=DIR` trains configs/efficientnet/default.gin."""

from models.core.main import main
from models.core.tasks.image_classification import ImageClassificationTask
from models.efficientnet import model  # noqa: F401 - registers the gin configurables

if __name__ == "__main__":
    main(ImageClassificationTask, family="efficientnet", default_recipe="efficientnet/default.gin")
