"""`python -m models.resnet --model_dir=DIR` trains configs/resnet/default.gin on digits."""

from models.core.main import main
from models.core.tasks.image_classification import ImageClassificationTask
from models.resnet import model  # noqa: F401 - registers the gin configurables

if __name__ == "__main__":
    main(ImageClassificationTask, family="resnet", default_recipe="resnet/default.gin")
